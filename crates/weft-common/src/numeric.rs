//! Exact decimal numbers: PostgreSQL's `numeric`, as far as weft needs it
//! (results of sum(int8), avg of integers, decimal literals).

/// value = mantissa × 10^-scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Numeric {
    pub mantissa: i128,
    pub scale: u16,
}

impl std::fmt::Display for Numeric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let negative = self.mantissa < 0;
        let digits = self.mantissa.unsigned_abs().to_string();
        let scale = self.scale as usize;
        let sign = if negative { "-" } else { "" };
        if scale == 0 {
            return write!(f, "{sign}{digits}");
        }
        let padded = if digits.len() <= scale { format!("{}{}", "0".repeat(scale + 1 - digits.len()), digits) } else { digits };
        let (int_part, frac_part) = padded.split_at(padded.len() - scale);
        write!(f, "{sign}{int_part}.{frac_part}")
    }
}
