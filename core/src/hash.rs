//! Hashing: of addresses for the front ends' lookup tables (the ICD's handle registry,
//! OpenMP's depend and reduction maps), and a stable hash for keys written to files
//! ([`Fnv`]).
//!
//! **Owns**: [`AddrHasher`]. Keys are addresses (handles Weft allocated, the program's own
//! variables), not attacker-chosen input, and std's SipHash costs more than the rest of a
//! lookup (~140 instructions; an OpenCL enqueue looks up two handles, an OpenMP task one
//! address per depend clause).

/// Hashes an address with one multiplication (Fibonacci hashing).
#[derive(Clone, Copy, Default)]
pub struct AddrHasher(u64);

/// The `BuildHasher` of maps keyed by address: `HashMap<usize, V, BuildAddrHasher>`.
pub type BuildAddrHasher = std::hash::BuildHasherDefault<AddrHasher>;

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl std::hash::Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(K);
        }
    }
    fn write_usize(&mut self, n: usize) {
        // The high bits pick hashbrown's control byte and the low ones its bucket: the
        // product spreads an aligned address's bits over both.
        self.0 = (self.0 ^ n as u64).wrapping_mul(K).rotate_left(26);
    }
}

/// FNV-1a, 64 bits: a hash that stays the same across processes, builds and Rust versions
/// (std's `DefaultHasher` promises neither), for keys written to files: performance-model
/// footprints, the ICD's program source hashes, the bus model's machine key.
#[derive(Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    /// Little-endian bytes of `v`: the same value hashes the same on every machine.
    pub fn write_u64(&mut self, v: u64) {
        self.write(&v.to_le_bytes());
    }
    pub fn finish(&self) -> u64 {
        self.0
    }
    /// The hash of `bytes` alone.
    pub fn hash(bytes: &[u8]) -> u64 {
        let mut h = Fnv::default();
        h.write(bytes);
        h.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    /// The published FNV-1a test vectors: the hash is the standard one, so files written
    /// by one build are read the same by the next.
    #[test]
    fn fnv_matches_the_reference_vectors() {
        assert_eq!(Fnv::hash(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(Fnv::hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(Fnv::hash(b"foobar"), 0x8594_4171_f739_67e8);
    }

    /// Addresses 64 bytes apart (aligned allocations) land in distinct low and high bits.
    #[test]
    fn aligned_addresses_spread() {
        let b = BuildAddrHasher::default();
        let hashes: Vec<u64> = (0..4096usize).map(|i| b.hash_one(0x7f00_0000_0000 + i * 64)).collect();
        let low: HashSet<u64> = hashes.iter().map(|h| h & 4095).collect();
        let top: HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        assert!(low.len() > 2000, "only {} of 4096 low-bit buckets used", low.len());
        assert_eq!(top.len(), 128, "every control-byte value used");
    }
}
