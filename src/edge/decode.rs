//! `--compressed`: decoding a body's Content-Encoding (gzip, deflate, br, zstd)
//! while it streams, and stopping one that decodes to far more than it
//! weighed: a few kilobytes of gzip can expand to gigabytes.

use std::cell::Cell;
use std::io::{self, Read};
use std::rc::Rc;

/// What `--compressed` asks for: curl's own value, word for word.
pub const ACCEPTED: &str = "deflate, gzip, br, zstd";

/// The largest zstd window decoded: RFC 9659 limits a zstd content coding
/// to an 8 MiB window (as browsers do), which bounds what one answer can
/// make abide allocate before the ratio guard has seen any output.
const ZSTD_WINDOW: u64 = 8 << 20;

/// Decoded bytes allowed whatever the ratio, so that small, very
/// compressible answers (a page of spaces) are never stopped.
const FREE: u64 = 1 << 20;

/// Why a decoded body was stopped; found again in the read error.
#[derive(Debug)]
pub struct TooDense {
    pub max_ratio: u64,
    pub encoded: u64,
}

impl std::fmt::Display for TooDense {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "the body decoded to more than {} times its encoded size (--max-ratio)",
            self.max_ratio
        )
    }
}

impl std::error::Error for TooDense {}

/// The body decoded from `encoding`, or as it came when abide does not know
/// the encoding (as curl writes it); the flag tells which.
pub fn decoder(encoding: &str, body: Box<dyn Read>, max_ratio: u64) -> (bool, Box<dyn Read>) {
    let encoded = Rc::new(Cell::new(0));
    let counted = Counted {
        body,
        count: Rc::clone(&encoded),
    };
    let decoded: Box<dyn Read> = match encoding.trim().to_ascii_lowercase().as_str() {
        "gzip" | "x-gzip" => Box::new(flate2::read::MultiGzDecoder::new(counted)),
        "deflate" => Box::new(flate2::read::ZlibDecoder::new(counted)),
        "br" => Box::new(brotli_decompressor::Decompressor::new(counted, 4096)),
        "zstd" => Box::new(Zstd::new(counted)),
        _ => return (false, counted.body),
    };
    let guarded = Guarded {
        decoded,
        encoded,
        out: 0,
        max_ratio,
    };
    (true, Box::new(guarded))
}

struct Counted {
    body: Box<dyn Read>,
    count: Rc<Cell<u64>>,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.body.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// A zstd body (RFC 8878): its frames one after another, skippable frames
/// skipped, until the body ends between two frames.
struct Zstd {
    source: io::BufReader<Counted>,
    frame: ruzstd::decoding::FrameDecoder,
    in_frame: bool,
}

impl Zstd {
    fn new(body: Counted) -> Zstd {
        let mut frame = ruzstd::decoding::FrameDecoder::new();
        frame.set_max_window_size(ZSTD_WINDOW);
        Zstd {
            source: io::BufReader::new(body),
            frame,
            in_frame: false,
        }
    }
}

impl Read for Zstd {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use io::BufRead;
        use ruzstd::decoding::BlockDecodingStrategy;
        use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.in_frame {
                while self.frame.can_collect() == 0 && !self.frame.is_finished() {
                    self.frame
                        .decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBlocks(1))
                        .map_err(io::Error::other)?;
                }
                let n = self.frame.read(buf)?;
                if n > 0 {
                    return Ok(n);
                }
                self.in_frame = false;
            }
            if self.source.fill_buf()?.is_empty() {
                return Ok(0);
            }
            match self.frame.reset(&mut self.source) {
                Ok(()) => self.in_frame = true,
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => {
                    let skipped =
                        io::copy(&mut (&mut self.source).take(length.into()), &mut io::sink())?;
                    if skipped < u64::from(length) {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                }
                Err(e) => return Err(io::Error::other(e)),
            }
        }
    }
}

struct Guarded {
    decoded: Box<dyn Read>,
    encoded: Rc<Cell<u64>>,
    out: u64,
    max_ratio: u64,
}

impl Read for Guarded {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.decoded.read(buf)?;
        self.out += n as u64;
        let encoded = self.encoded.get();
        if over(self.out, encoded, self.max_ratio) {
            let max_ratio = self.max_ratio;
            return Err(io::Error::other(TooDense { max_ratio, encoded }));
        }
        Ok(n)
    }
}

fn over(decoded: u64, encoded: u64, max_ratio: u64) -> bool {
    decoded > FREE.max(encoded.saturating_mul(max_ratio))
}

/// The stop of a body that decoded too large, if that is what `error` is.
pub fn too_dense(error: &io::Error) -> Option<&TooDense> {
    error.get_ref()?.downcast_ref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn decode(encoding: &str, body: Vec<u8>, max_ratio: u64) -> io::Result<Vec<u8>> {
        let (decoded, mut reader) = decoder(encoding, Box::new(io::Cursor::new(body)), max_ratio);
        assert!(decoded || encoding == "compress");
        let mut out = Vec::new();
        reader.read_to_end(&mut out).map(|_| out)
    }

    #[test]
    fn the_ratio_rule() {
        assert!(!over(FREE, 0, 100));
        assert!(over(FREE + 1, 10, 100));
        assert!(!over(10 << 20, 1 << 20, 10));
        assert!(over((10 << 20) + 1, 1 << 20, 10));
        assert!(!over(u64::MAX, u64::MAX, u64::MAX));
    }

    #[test]
    fn gzip_and_deflate_decode_and_a_bomb_is_stopped() {
        let text = b"hello ".repeat(1000);
        assert_eq!(decode("gzip", gzip(&text), 100).unwrap(), text);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&text).unwrap();
        assert_eq!(decode("Deflate", z.finish().unwrap(), 100).unwrap(), text);
        // 8 MiB of zeros weigh about 8 KiB gzipped: a ratio near 1000.
        let bomb = gzip(&vec![0; 8 << 20]);
        let error = decode("gzip", bomb.clone(), 100).unwrap_err();
        let stop = too_dense(&error).unwrap();
        assert_eq!(stop.max_ratio, 100);
        assert!(stop.encoded <= bomb.len() as u64);
        assert_eq!(decode("gzip", bomb, 2000).unwrap().len(), 8 << 20);
        // Unknown encodings are passed on as they came.
        assert_eq!(decode("compress", b"raw".to_vec(), 1).unwrap(), b"raw");
    }

    fn zstd(bytes: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(bytes, ruzstd::encoding::CompressionLevel::Fastest)
    }

    #[test]
    fn zstd_decodes_frame_after_frame_and_a_bomb_is_stopped() {
        let text = b"hello zstd ".repeat(1000);
        assert_eq!(decode("zstd", zstd(&text), 100).unwrap(), text);
        // Two frames with a skippable frame between them are one body.
        let mut two = zstd(b"first ");
        two.extend_from_slice(&0x184D_2A50u32.to_le_bytes());
        two.extend_from_slice(&3u32.to_le_bytes());
        two.extend_from_slice(b"pad");
        two.extend(zstd(b"second"));
        assert_eq!(decode("ZSTD", two, 100).unwrap(), b"first second");
        // A body cut inside a frame, or one that is not zstd, is an error.
        let whole = zstd(&text);
        assert!(decode("zstd", whole[..whole.len() / 2].to_vec(), 100).is_err());
        assert!(decode("zstd", b"not zstd".to_vec(), 100).is_err());
        assert_eq!(decode("zstd", Vec::new(), 100).unwrap(), b"");
        // 8 MiB of zeros: stopped by the ratio guard as gzip is.
        let bomb = zstd(&vec![0; 8 << 20]);
        let error = decode("zstd", bomb.clone(), 100).unwrap_err();
        assert_eq!(too_dense(&error).unwrap().max_ratio, 100);
        assert_eq!(decode("zstd", bomb, 1_000_000).unwrap().len(), 8 << 20);
    }
}
