//! What a pod sees of its cluster, pointed at the loopback API server: the
//! `KUBERNETES_SERVICE_HOST`/`_PORT` variables, an HTTPS front for the API (certificate
//! made by the `openssl` command), and a service account folder with `token`, `ca.crt`
//! and `namespace`. meshlens finds the folder through `cluster.service_account_dir`.

use std::{net::SocketAddr, path::Path, process::Command, sync::Arc};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};

use crate::kube_api::KubeApi;

/// A running HTTPS front and the service account folder; stops when dropped.
pub struct InCluster {
    dir: tempfile::TempDir,
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for InCluster {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A self-signed certificate for 127.0.0.1 (key, cert) in `dir`.
fn certificate(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (key, cert) = (dir.join("tls.key"), dir.join("ca.crt"));
    let out = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
        ])
        .args([
            "-subj",
            "/CN=kubernetes",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-addext",
            "basicConstraints=critical,CA:FALSE",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("run openssl (Debian package `openssl`; scripts/test.sh installs it)");
    assert!(out.status.success(), "openssl req failed: {}", String::from_utf8_lossy(&out.stderr));
    (key, cert)
}

impl InCluster {
    /// Starts an HTTPS front for `api` and writes a service account folder holding `token`.
    pub async fn start(api: &KubeApi, token: &str) -> InCluster {
        let dir = tempfile::tempdir().expect("temp dir");
        let (key, cert) = certificate(dir.path());
        std::fs::write(dir.path().join("token"), token).expect("write token");
        std::fs::write(dir.path().join("namespace"), "istio-system").expect("write namespace");
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert)
            .expect("read cert")
            .collect::<Result<_, _>>()
            .expect("parse cert");
        let key = PrivateKeyDer::from_pem_file(&key).expect("read key");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("TLS config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let inner: SocketAddr =
            api.url().trim_start_matches("http://").parse().expect("API address");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                    let Ok(mut up) = tokio::net::TcpStream::connect(inner).await else { return };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
                });
            }
        });
        InCluster { dir, addr, task }
    }

    /// The service account folder (`cluster.service_account_dir`).
    pub fn service_account_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The variables a pod gets, plus the folder's config override.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("KUBERNETES_SERVICE_HOST".into(), self.addr.ip().to_string()),
            ("KUBERNETES_SERVICE_PORT".into(), self.addr.port().to_string()),
            ("MESHLENS_CLUSTER__SERVICE_ACCOUNT_DIR".into(), self.dir.path().display().to_string()),
        ]
    }
}
