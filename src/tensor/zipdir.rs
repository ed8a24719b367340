//! The members of a zip archive (NPZ, PyTorch zip): names and where their bytes are, via the `zip` crate's directory reader.

use super::bytes::{Blob, Packing, Source};
use super::error::Problem;
use zip::CompressionMethod;

/// Most members an archive may list (a directory claiming more is refused before reading them).
pub const MAX_MEMBERS: usize = 1 << 20;

/// One member of an archive: its name and its bytes.
#[derive(Debug, Clone)]
pub struct Member {
    pub name: String,
    pub blob: Blob,
}

/// Whether the bytes start like a zip archive.
pub fn looks_like_zip(head: &[u8]) -> bool {
    head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06")
}

fn zip_problem(e: zip::result::ZipError) -> Problem {
    match e {
        zip::result::ZipError::Io(e) => Problem::from(e),
        zip::result::ZipError::InvalidArchive(msg)
            if msg.contains("EOCD") || msg.contains("end of central directory") =>
        {
            Problem::Truncated(format!("zip archive has no central directory ({msg})"))
        }
        other => Problem::Zip(other.to_string()),
    }
}

/// Read the central directory and each member's local header (not its data).
pub fn members<S: Source>(src: &mut S) -> Result<Vec<Member>, Problem> {
    let mut archive = zip::ZipArchive::new(&mut *src).map_err(zip_problem)?;
    if archive.len() > MAX_MEMBERS {
        return Err(Problem::TooLarge {
            what: "zip member count",
            size: archive.len() as u64,
            cap: MAX_MEMBERS as u64,
        });
    }
    let mut out = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let file = archive.by_index_raw(i).map_err(zip_problem)?;
        let name = file.name().map_err(zip_problem)?.into_owned();
        if file.is_dir() {
            continue;
        }
        if file.encrypted() {
            return Err(Problem::Zip(format!("member `{name}` is encrypted")));
        }
        let start = file
            .data_start()
            .ok_or_else(|| Problem::Zip(format!("member `{name}` has no data offset")))?;
        let packing = match file.compression() {
            CompressionMethod::Stored if file.compressed_size() == file.size() => {
                Packing::Stored { crc: file.crc32() }
            }
            CompressionMethod::Stored => {
                return Err(Problem::Zip(format!(
                    "stored member `{name}` declares {} bytes stored but {} bytes long",
                    file.compressed_size(),
                    file.size()
                )))
            }
            CompressionMethod::Deflated => Packing::Deflated {
                compressed: file.compressed_size(),
                crc: file.crc32(),
            },
            other => {
                return Err(Problem::Unsupported(format!(
                "member `{name}` is compressed with {other:?} (only stored and deflated are read)"
            )))
            }
        };
        let blob = Blob {
            start,
            len: file.size(),
            packing,
        };
        out.push(Member { name, blob });
    }
    Ok(out)
}
