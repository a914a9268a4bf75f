//! The browser console: static assets under `{web_root}console/`, embedded in the binary.
//!
//! Every asset is answered with its content type, a strong ETag (304 on a matching
//! `If-None-Match`) and a gzip body when the client accepts it. Paths that name no asset and
//! no file (`console/graph?...`) get the single page, so deep links work. `/` asked for by a
//! browser (`Accept: text/html`) redirects to the console; API clients still get StatusInfo.

use std::{collections::HashMap, io::Write, sync::OnceLock};

use sha2::{Digest, Sha256};
use warp::http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};

#[derive(rust_embed::RustEmbed)]
#[folder = "console/"]
struct Assets;

/// One asset ready to send: identity and gzip bodies with their ETags.
struct Prepared {
    content_type: &'static str,
    body: Vec<u8>,
    etag: String,
    gzip: Option<(Vec<u8>, String)>,
}

/// The placeholder in `index.html` that becomes the web root (so the page finds its assets
/// and the API under any `server.web_root`).
const WEB_ROOT_MARK: &str = "{{WEB_ROOT}}";

/// Answers console requests and the browser's `/`; `None` for everything else (the API).
pub fn intercept(
    web_root: &[String],
    method: &Method,
    parts: &[String],
    headers: &HeaderMap,
) -> Option<Response<Vec<u8>>> {
    let rest = parts.strip_prefix(web_root)?;
    let root = root_path(web_root);
    if rest.is_empty() {
        return wants_html(headers).then(|| redirect(&format!("{root}console/")));
    }
    if rest[0] != "console" {
        return None;
    }
    if method != Method::GET && method != Method::HEAD {
        return Some(plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed: only GET is supported",
        ));
    }
    let file = rest[1..].join("/");
    let assets = prepared(&root);
    let asset = match assets.get(file.as_str()) {
        Some(a) => a,
        // A missing file (a name with an extension) is a 404; any other path is a view of the page.
        None if rest.last().is_some_and(|l| l.contains('.')) => {
            return Some(plain(StatusCode::NOT_FOUND, "no such console file"));
        }
        None => assets.get("index.html")?,
    };
    Some(respond(asset, headers))
}

fn root_path(web_root: &[String]) -> String {
    if web_root.is_empty() { "/".to_string() } else { format!("/{}/", web_root.join("/")) }
}

fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.split(',').any(|t| t.trim().starts_with("text/html")))
}

fn redirect(to: &str) -> Response<Vec<u8>> {
    let mut resp = Response::new(Vec::new());
    *resp.status_mut() = StatusCode::FOUND;
    if let Ok(v) = HeaderValue::from_str(to) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

fn plain(status: StatusCode, msg: &str) -> Response<Vec<u8>> {
    let body = serde_json::json!({ "code": status.as_u16(), "message": msg }).to_string();
    let mut resp = Response::new(body.into_bytes());
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

fn respond(asset: &Prepared, headers: &HeaderMap) -> Response<Vec<u8>> {
    let (body, etag, gzipped) = match &asset.gzip {
        Some((gz, etag)) if accepts_gzip(headers) => (gz, etag, true),
        _ => (&asset.body, &asset.etag, false),
    };
    let not_modified = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut resp = Response::new(if not_modified { Vec::new() } else { body.clone() });
    if not_modified {
        *resp.status_mut() = StatusCode::NOT_MODIFIED;
    }
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    // Revalidate every time: the ETag makes that a 304 without a body.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    if gzipped {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    resp
}

/// `gzip` listed in Accept-Encoding with a non-zero q (or `*`).
fn accepts_gzip(headers: &HeaderMap) -> bool {
    let Some(v) = headers.get(header::ACCEPT_ENCODING).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    v.split(',').any(|item| {
        let mut it = item.split(';');
        let coding = it.next().unwrap_or("").trim();
        let q_zero = it.any(|p| {
            p.trim()
                .strip_prefix("q=")
                .is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q == 0.0))
        });
        (coding.eq_ignore_ascii_case("gzip") || coding == "*") && !q_zero
    })
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, e)| e) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        _ => "text/plain; charset=utf-8",
    }
}

/// Every asset, prepared once per process (the web root never changes while it runs).
fn prepared(root: &str) -> &'static HashMap<String, Prepared> {
    static CACHE: OnceLock<HashMap<String, Prepared>> = OnceLock::new();
    CACHE.get_or_init(|| {
        Assets::iter()
            .filter_map(|path| {
                let file = Assets::get(&path)?;
                let mut body = file.data.into_owned();
                if path == "index.html" {
                    body = String::from_utf8_lossy(&body).replace(WEB_ROOT_MARK, root).into_bytes();
                }
                let content_type = content_type(&path);
                let gzip = compressible(content_type).then(|| gzip(&body)).flatten().map(|gz| {
                    let etag = etag(&gz, "gz");
                    (gz, etag)
                });
                let etag = etag(&body, "id");
                Some((path.into_owned(), Prepared { content_type, body, etag, gzip }))
            })
            .collect()
    })
}

fn compressible(content_type: &str) -> bool {
    !content_type.starts_with("image/png")
}

fn gzip(body: &[u8]) -> Option<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(body).ok()?;
    enc.finish().ok()
}

fn etag(body: &[u8], kind: &str) -> String {
    let digest = Sha256::digest(body);
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}-{kind}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn gzip_negotiation_honours_q_zero() {
        assert!(accepts_gzip(&headers(&[("accept-encoding", "gzip, deflate, br")])));
        assert!(accepts_gzip(&headers(&[("accept-encoding", "br;q=1.0, gzip;q=0.5")])));
        assert!(!accepts_gzip(&headers(&[("accept-encoding", "gzip;q=0")])));
        assert!(!accepts_gzip(&headers(&[("accept-encoding", "identity")])));
        assert!(!accepts_gzip(&headers(&[])));
    }

    #[test]
    fn only_html_requests_for_the_root_redirect() {
        let root: Vec<String> = vec![];
        let html = headers(&[("accept", "text/html,application/xhtml+xml,*/*;q=0.8")]);
        let r = intercept(&root, &Method::GET, &[], &html).expect("redirect");
        assert_eq!(r.status(), StatusCode::FOUND);
        assert_eq!(r.headers()[header::LOCATION], "/console/");
        assert!(
            intercept(&root, &Method::GET, &[], &headers(&[("accept", "application/json")]))
                .is_none()
        );
        assert!(intercept(&root, &Method::GET, &["api".into(), "status".into()], &html).is_none());
    }
}
