//! CRC-32 (zip's) of entry bytes: crc32fast natively (carry-less multiply); in wasm, which has none, a kernel the host offers (Node's zlib) or slicing-by-16 over four interleaved streams.

use std::sync::OnceLock;

/// A CRC-32 kernel offered by the host the core runs in: `(crc so far, bytes) -> crc`, in
/// zlib's convention (`crc32(crc32(0, a), b) == crc32(0, a ++ b)`); `None` when it failed.
pub type HostKernel = fn(u32, &[u8]) -> Option<u32>;

/// The host's kernel, once one has been registered and passed the check value.
static HOST: OnceLock<HostKernel> = OnceLock::new();

/// Use `kernel` for long runs of bytes from now on, if it gives the standard's check value
/// (the CRC of `"123456789"`); answers whether a host kernel is in use. The first one
/// accepted stays.
pub fn set_host_kernel(kernel: HostKernel) -> bool {
    if kernel(0, b"123456789") != Some(0xcbf4_3926) {
        return false;
    }
    let _ = HOST.set(kernel);
    true
}

/// Bytes below which the interleaved kernel is not worth splitting for.
const INTERLEAVE_MIN: usize = 1 << 12;

/// The reflected CRC-32 polynomial of zip and PNG.
const POLY: u32 = 0xedb8_8320;

/// Slicing-by-16 tables: `TABLE[k][b]` is the CRC state of byte `b` followed by `k` zero bytes.
static TABLE: [[u32; 256]; 16] = tables();

const fn tables() -> [[u32; 256]; 16] {
    let mut t = [[0u32; 256]; 16];
    let mut b = 0;
    while b < 256 {
        let mut c = b as u32;
        let mut i = 0;
        while i < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            i += 1;
        }
        t[0][b] = c;
        b += 1;
    }
    let mut k = 1;
    while k < 16 {
        let mut b = 0;
        while b < 256 {
            let prev = t[k - 1][b];
            t[k][b] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            b += 1;
        }
        k += 1;
    }
    t
}

/// Fold one 16-byte block into a (pre-inverted) CRC state.
#[inline(always)]
fn fold16(state: u32, b: &[u8; 16]) -> u32 {
    let w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) ^ state;
    let t = &TABLE;
    t[15][(w & 0xff) as usize]
        ^ t[14][((w >> 8) & 0xff) as usize]
        ^ t[13][((w >> 16) & 0xff) as usize]
        ^ t[12][(w >> 24) as usize]
        ^ t[11][b[4] as usize]
        ^ t[10][b[5] as usize]
        ^ t[9][b[6] as usize]
        ^ t[8][b[7] as usize]
        ^ t[7][b[8] as usize]
        ^ t[6][b[9] as usize]
        ^ t[5][b[10] as usize]
        ^ t[4][b[11] as usize]
        ^ t[3][b[12] as usize]
        ^ t[2][b[13] as usize]
        ^ t[1][b[14] as usize]
        ^ t[0][b[15] as usize]
}

/// Fold bytes one at a time into a (pre-inverted) CRC state.
fn fold_bytes(mut state: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        state = (state >> 8) ^ TABLE[0][((state ^ u32::from(b)) & 0xff) as usize];
    }
    state
}

/// The CRC-32 of `bytes` by slicing-by-16 (one stream).
fn sliced(bytes: &[u8]) -> u32 {
    let blocks = bytes.chunks_exact(16);
    let tail = blocks.remainder();
    let mut s = !0u32;
    for b in blocks {
        s = fold16(s, b.try_into().unwrap_or(&[0; 16]));
    }
    !fold_bytes(s, tail)
}

/// The CRC-32 of `bytes` as four parts hashed side by side (their dependency chains overlap)
/// and joined with [`crc32fast::Hasher::combine`].
pub fn interleaved(bytes: &[u8]) -> u32 {
    if bytes.len() < INTERLEAVE_MIN {
        return sliced(bytes);
    }
    let part = bytes.len() / 4 / 16 * 16;
    let (p0, rest) = bytes.split_at(part);
    let (p1, rest) = rest.split_at(part);
    let (p2, p3) = rest.split_at(part);
    let mut s = [!0u32; 4];
    let quads = p0
        .chunks_exact(16)
        .zip(p1.chunks_exact(16))
        .zip(p2.chunks_exact(16).zip(p3.chunks_exact(16)));
    for ((a, b), (c, d)) in quads {
        let block = |x: &[u8]| -> [u8; 16] { x.try_into().unwrap_or([0; 16]) };
        s[0] = fold16(s[0], &block(a));
        s[1] = fold16(s[1], &block(b));
        s[2] = fold16(s[2], &block(c));
        s[3] = fold16(s[3], &block(d));
    }
    s[3] = fold_bytes(s[3], p3.get(part..).unwrap_or(&[]));
    let mut h = crc32fast::Hasher::new_with_initial_len(!s[0], part as u64);
    for (state, len) in [(s[1], part), (s[2], part), (s[3], p3.len())] {
        h.combine(&crc32fast::Hasher::new_with_initial_len(!state, len as u64));
    }
    h.finalize()
}

/// A running CRC-32 over bytes handed in piece by piece.
#[derive(Clone, Default)]
pub struct Crc(crc32fast::Hasher);

impl Crc {
    /// A CRC over no bytes yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add the next bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        if bytes.len() >= INTERLEAVE_MIN {
            if let Some(crc) = HOST.get().and_then(|k| k(0, bytes)) {
                let part = crc32fast::Hasher::new_with_initial_len(crc, bytes.len() as u64);
                self.0.combine(&part);
                return;
            }
        }
        #[cfg(target_arch = "wasm32")]
        if bytes.len() >= INTERLEAVE_MIN {
            let part =
                crc32fast::Hasher::new_with_initial_len(interleaved(bytes), bytes.len() as u64);
            self.0.combine(&part);
            return;
        }
        self.0.update(bytes);
    }

    /// The CRC-32 of everything added.
    pub fn finalize(self) -> u32 {
        self.0.finalize()
    }
}

/// The CRC-32 of `bytes` in one call.
pub fn hash(bytes: &[u8]) -> u32 {
    let mut c = Crc::new();
    c.update(bytes);
    c.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_agrees_with_crc32fast() {
        // Lengths around every boundary: blocks of 16, the interleave threshold, odd tails.
        let data: Vec<u8> = (0..(1u32 << 17) + 77)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let lens = [
            0,
            1,
            15,
            16,
            17,
            63,
            64,
            4095,
            4096,
            4097,
            4096 * 4 + 13,
            data.len(),
        ];
        for len in lens {
            let bytes = &data[..len];
            let want = crc32fast::hash(bytes);
            assert_eq!(sliced(bytes), want, "sliced, {len} bytes");
            assert_eq!(interleaved(bytes), want, "interleaved, {len} bytes");
            assert_eq!(hash(bytes), want, "hash, {len} bytes");
            let mut c = Crc::new();
            let (a, b) = bytes.split_at(len / 3);
            c.update(a);
            c.update(b);
            assert_eq!(c.finalize(), want, "in two pieces, {len} bytes");
        }
    }

    #[test]
    fn a_host_kernel_must_give_the_check_value() {
        assert!(
            !set_host_kernel(|_, _| Some(0)),
            "a wrong kernel is refused"
        );
        assert!(HOST.get().is_none());
    }

    #[test]
    fn the_check_value_of_the_standard() {
        // CRC-32/ISO-HDLC's published check value: the CRC of "123456789".
        assert_eq!(interleaved(b"123456789"), 0xcbf4_3926);
        assert_eq!(hash(b"123456789"), 0xcbf4_3926);
    }
}
