//! `--cacert FILE`, as curl reads it: its certificates are trusted as CAs,
//! and a server whose own certificate is one of them, byte for byte, is
//! trusted too. That is how a self-signed certificate (what `openssl req
//! -x509` makes, marked CA:TRUE) is used, and webpki alone refuses it as a
//! CA used as an end entity. ureq 3 has no hook for a certificate verifier,
//! so this is a TLS connector in its connector chain, as its own rustls one.
//!
//! Also `--cert`/`--key`: a client certificate and its key, from PEM files.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{WebPkiServerVerifier, verify_server_name};
use rustls::pki_types::PrivateKeyDer;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, StreamOwned};
use ureq::tls::{Certificate, ClientCert, PemItem};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, RustlsConnector,
    Transport, TransportAdapter,
};

/// The TLS step of the connector chain: ureq's own, or the one that
/// trusts `--cacert` as curl does.
#[derive(Debug)]
pub enum TlsStep {
    Ureq(RustlsConnector),
    Exact(CaFile),
}

impl<In: Transport> Connector<In> for TlsStep {
    type Out = Box<dyn Transport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        Ok(match self {
            TlsStep::Ureq(step) => step.connect(details, chained)?.map(Transport::boxed),
            TlsStep::Exact(step) => step.connect(details, chained)?.map(Transport::boxed),
        })
    }
}

/// `--cert FILE` and `--key FILE`: the certificate chain and the private
/// key, from PEM; without `--key` the key is looked for in the cert file,
/// as curl does.
pub fn client_cert(cert: &Path, key: Option<&Path>) -> anyhow::Result<ClientCert> {
    let read = |path: &Path| -> anyhow::Result<Vec<PemItem<'static>>> {
        let pem = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        ureq::tls::parse_pem(&pem)
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("{} is not valid PEM", path.display()))
    };
    let items = read(cert)?;
    let certs: Vec<Certificate<'static>> = items
        .iter()
        .filter_map(|item| match item {
            PemItem::Certificate(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    anyhow::ensure!(
        !certs.is_empty(),
        "--cert {} holds no certificate",
        cert.display()
    );
    let key_items = match key {
        Some(path) => read(path)?,
        None => items,
    };
    let private = key_items
        .into_iter()
        .find_map(|item| match item {
            PemItem::PrivateKey(k) => Some(k),
            _ => None,
        })
        .with_context(|| {
            format!(
                "no unencrypted private key in {} (give it with --key FILE)",
                key.unwrap_or(cert).display()
            )
        })?;
    Ok(ClientCert::new_with_certs(&certs, private))
}

/// Trusts a server certificate that is one of `certs` exactly (and valid
/// for the name), else whatever webpki trusts with `certs` as roots.
#[derive(Debug)]
struct Exact {
    certs: Vec<CertificateDer<'static>>,
    webpki: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for Exact {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.certs.iter().any(|c| c == end_entity) {
            verify_server_name(&ParsedCertificate::try_from(end_entity)?, server_name)?;
            return Ok(ServerCertVerified::assertion());
        }
        self.webpki
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// The TLS step of the connector chain, with the `Exact` verifier.
#[derive(Debug)]
pub struct CaFile {
    tls: Arc<ClientConfig>,
}

impl CaFile {
    /// Trusts `certs` as `--cacert` means it, and shows `client` when the
    /// server asks for a certificate.
    pub fn new(
        certs: &[Certificate<'static>],
        client: Option<&ClientCert>,
    ) -> anyhow::Result<CaFile> {
        let certs: Vec<CertificateDer<'static>> = certs
            .iter()
            .map(|c| CertificateDer::from(c.der().to_vec()))
            .collect();
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(certs.iter().cloned());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| anyhow::anyhow!("no usable CA certificate ({e})"))?;
        let tls = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .dangerous()
            // Not dangerous: every certificate is still verified, by webpki
            // or by being exactly one the user gave.
            .with_custom_certificate_verifier(Arc::new(Exact { certs, webpki }));
        let tls = match client {
            Some(client) => {
                let chain = client
                    .certs()
                    .iter()
                    .map(|c| CertificateDer::from(c.der().to_vec()))
                    .collect();
                let key = PrivateKeyDer::try_from(client.private_key().der().to_vec())
                    .map_err(|e| anyhow::anyhow!("--key: {e}"))?;
                tls.with_client_auth_cert(chain, key)?
            }
            None => tls.with_no_client_auth(),
        };
        Ok(CaFile { tls: Arc::new(tls) })
    }
}

impl<In: Transport> Connector<In> for CaFile {
    type Out = Either<In, TlsTransport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(transport) = chained else {
            return Ok(None);
        };
        if !details.needs_tls() || transport.is_tls() {
            return Ok(Some(Either::A(transport)));
        }
        let host = details
            .uri
            .host()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let name = ServerName::try_from(host.to_string())
            .map_err(|_| ureq::Error::Tls("invalid server name for TLS"))?;
        let mut conn = ClientConnection::new(Arc::clone(&self.tls), name)?;
        let mut sock = TransportAdapter::new(transport.boxed(), details.current_time.clone());
        sock.set_timeout(details.timeout);
        conn.complete_io(&mut sock)?;
        Ok(Some(Either::B(TlsTransport {
            buffers: LazyBuffers::new(
                details.config.input_buffer_size(),
                details.config.output_buffer_size(),
            ),
            stream: StreamOwned { conn, sock },
        })))
    }
}

/// A TLS connection, as ureq's own rustls transport keeps one.
pub struct TlsTransport {
    buffers: LazyBuffers,
    stream: StreamOwned<ClientConnection, TransportAdapter>,
}

impl std::fmt::Debug for TlsTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsTransport").finish_non_exhaustive()
    }
}

impl Transport for TlsTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let output = &self.buffers.output()[..amount];
        self.stream.write_all(output)?;
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let input = self.buffers.input_append_buf();
        let amount = self.stream.read(input)?;
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        self.stream.get_mut().get_mut().is_open()
    }

    fn is_tls(&self) -> bool {
        true
    }
}
