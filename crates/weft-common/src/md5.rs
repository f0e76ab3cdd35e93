//! SQL `md5(text)`: the MD5 digest of a byte string as 32 lowercase hex digits.
//!
//! The digest itself comes from the `md-5` crate (RustCrypto); this module only renders it the
//! way PostgreSQL's `md5()` does. Hex encoding goes through a 16-entry table into a
//! preallocated buffer: a `format!("{:02x}")` per byte allocates and parses a format string
//! 16 times per call, which showed up when `md5()` was applied to every row of a scan.
//!
//! MD5 is here for compatibility (checksumming values in tests, `md5()` in user queries), not
//! for security.

use md5::{Digest, Md5};

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// The MD5 digest of `bytes` as 32 lowercase hexadecimal characters, as PostgreSQL's `md5()`.
pub fn md5_hex(bytes: &[u8]) -> String {
    let digest = Md5::digest(bytes);
    let mut hex = String::with_capacity(2 * digest.len());
    for &byte in digest.iter() {
        hex.push(HEX_DIGITS[(byte >> 4) as usize] as char);
        hex.push(HEX_DIGITS[(byte & 0x0f) as usize] as char);
    }
    hex
}

#[cfg(test)]
mod tests {
    use super::md5_hex;

    #[test]
    fn matches_postgres() {
        // select s, md5(s) on PostgreSQL 15.18 (UTF-8 database).
        let cases: [(&str, &str); 9] = [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("-5", "47c1b025fa18ea96c33fbb6718688c0f"),
            ("0", "cfcd208495d565ef66e7dff9f98764da"),
            ("héllo", "be50e8478cf24ff3595bc7307fb91b50"),
            ("日本語", "00110af8b4393ef3f72c50be5b332bec"),
            ("hello world", "5eb63bbbe01eeed093cb22bb8f5acdc3"),
            ("abcdefghijklmnopqrstuvwxyz0123", "71da0db811d4c94847964ecef1e28f4e"),
        ];
        for (input, expected) in cases {
            assert_eq!(md5_hex(input.as_bytes()), expected, "md5({input:?})");
        }
        assert_eq!(md5_hex("ab".repeat(1000).as_bytes()), "6e3d828871c0d78f4952331a6a7bba68");
    }
}
