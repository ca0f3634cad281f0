//! The on-disk token cache file: format, checksum and atomic write (see the module docs of
//! [`super`] for where it lives and how it is capped).

use std::path::Path;

use super::TokenizerKind;

pub(super) const MAGIC: &[u8; 8] = b"TSTOKv1\n";
pub(super) const ENTRY_BYTES: usize = 16 + 4;

pub(super) fn header_id(kind: TokenizerKind) -> String {
    format!("{}@{}", kind.name(), kind.version())
}

pub(super) fn header_len(kind: TokenizerKind) -> usize {
    MAGIC.len() + 2 + header_id(kind).len() + 8
}

/// Layout: magic, u16 id length, id (`tokenizer@version`), u64 count, count × (u128 key, u32
/// tokens), u64 xxh3 checksum of everything before it. All little-endian.
pub(super) fn encode(
    kind: TokenizerKind,
    entries: impl Iterator<Item = (u128, u32)>,
    n: usize,
) -> Vec<u8> {
    let id = header_id(kind);
    let mut b = Vec::with_capacity(header_len(kind) + n * ENTRY_BYTES + 8);
    b.extend_from_slice(MAGIC);
    b.extend_from_slice(&(id.len() as u16).to_le_bytes());
    b.extend_from_slice(id.as_bytes());
    b.extend_from_slice(&(n as u64).to_le_bytes());
    for (k, t) in entries {
        b.extend_from_slice(&k.to_le_bytes());
        b.extend_from_slice(&t.to_le_bytes());
    }
    let sum = xxhash_rust::xxh3::xxh3_64(&b);
    b.extend_from_slice(&sum.to_le_bytes());
    b
}

/// `None` for anything that is not a complete, matching cache file.
pub(super) fn decode(bytes: &[u8], kind: TokenizerKind) -> Option<Vec<(u128, u32)>> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
    if xxhash_rust::xxh3::xxh3_64(body) != u64::from_le_bytes(sum.try_into().ok()?) {
        return None;
    }
    let rest = body.strip_prefix(MAGIC.as_slice())?;
    let (len, rest) = rest.split_at_checked(2)?;
    let len = u16::from_le_bytes(len.try_into().ok()?) as usize;
    let (id, rest) = rest.split_at_checked(len)?;
    if id != header_id(kind).as_bytes() {
        return None;
    }
    let (n, rest) = rest.split_at_checked(8)?;
    let n = usize::try_from(u64::from_le_bytes(n.try_into().ok()?)).ok()?;
    if rest.len() != n.checked_mul(ENTRY_BYTES)? {
        return None;
    }
    let entries = rest
        .chunks_exact(ENTRY_BYTES)
        .filter_map(|c| {
            let k = u128::from_le_bytes(c[..16].try_into().ok()?);
            let t = u32::from_le_bytes(c[16..].try_into().ok()?);
            Some((k, t))
        })
        .collect();
    Some(entries)
}

/// Write `bytes` to `path` through a temp file in the same dir and a rename, so a reader (or a
/// crash) sees the old file or the new one, never half of one.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_through_temp(path, bytes, true)
}

/// [`write_atomically`] without waiting for the disk: for a file that is checksummed and only
/// saves work (the token cache), a crash may leave the old file or an unreadable one, which is
/// ignored and rebuilt, so waiting for the disk on every cold load buys nothing.
pub(crate) fn write_replaceable(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_through_temp(path, bytes, false)
}

fn write_through_temp(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    crate::output_guard::replace_file(path, bytes, durable)
}
