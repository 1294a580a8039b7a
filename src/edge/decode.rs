//! `--compressed`: decoding a body's Content-Encoding (gzip, deflate, br)
//! while it streams, and stopping one that decodes to far more than it
//! weighed: a few kilobytes of gzip can expand to gigabytes.

use std::cell::Cell;
use std::io::{self, Read};
use std::rc::Rc;

/// What `--compressed` asks for.
pub const ACCEPTED: &str = "gzip, deflate, br";

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
        assert!(decoded || encoding == "zstd");
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
        assert_eq!(decode("zstd", b"raw".to_vec(), 1).unwrap(), b"raw");
    }
}
