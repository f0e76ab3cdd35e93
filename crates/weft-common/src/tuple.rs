//! The one tuple format weft uses in heap pages, temp files and memory.
//!
//! ```text
//! +----------------+--------------------------------+-------------------------------+
//! | null bitmap    | fixed-width section            | variable-width section        |
//! | ceil(n/8) bytes| each fixed column, schema order| each var column: u32 len, data|
//! +----------------+--------------------------------+-------------------------------+
//! ```
//!
//! Fixed-width columns keep their slot even when NULL (zero-filled), so every fixed
//! column sits at a constant offset computed once per schema: reading `randint` out of
//! a ten-column row is one bounds check and one load, whatever the other columns hold.
//! Variable-width columns (text) follow all fixed ones; reaching the k-th walks k
//! length words. Integers are little-endian and unaligned.
//!
//! An array column is variable-width: a `u32` element count, then the elements encoded
//! as a tuple of that many columns of the element type (its own null bitmap, fixed and
//! variable sections), so element NULLs and text elements need no second format.
//!
//! Invariant: a tuple is produced only by [`RowLayout::encode`] for the same layout it
//! is decoded with; decoding checks lengths and reports corruption as an error.

use crate::datetime::Interval;
use crate::numeric::Numeric;
use crate::types::{Array, DataType, Datum, ElemType};
use crate::{Error, Result, SqlState};

/// Where each column lives inside a tuple of one schema.
#[derive(Clone, Debug)]
pub struct RowLayout {
    types: Vec<DataType>,
    /// Per column: byte offset of a fixed column, or index among variable columns.
    slots: Vec<Slot>,
    var_start: usize,
}

#[derive(Clone, Copy, Debug)]
enum Slot {
    Fixed(usize),
    Var(usize),
}

fn corrupt() -> Error {
    Error::new(SqlState::DATA_CORRUPTED, "invalid tuple: length does not match its layout")
}

impl RowLayout {
    pub fn new(types: &[DataType]) -> RowLayout {
        let bitmap_len = types.len().div_ceil(8);
        let mut offset = bitmap_len;
        let mut var_index = 0;
        let mut slots = Vec::with_capacity(types.len());
        for ty in types {
            match ty.fixed_width() {
                Some(width) => {
                    slots.push(Slot::Fixed(offset));
                    offset += width;
                }
                None => {
                    slots.push(Slot::Var(var_index));
                    var_index += 1;
                }
            }
        }
        RowLayout { types: types.to_vec(), slots, var_start: offset }
    }

    pub fn types(&self) -> &[DataType] {
        &self.types
    }

    pub fn len(&self) -> usize {
        self.types.len()
    }

    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// Append the encoding of `row` to `out`. Values must already have the column types
    /// (the binder inserts casts); a mismatch is an internal error.
    pub fn encode(&self, row: &[Datum], out: &mut Vec<u8>) -> Result<()> {
        if row.len() != self.types.len() {
            return Err(Error::internal(format!("row has {} values, layout {}", row.len(), self.types.len())));
        }
        let start = out.len();
        out.resize(start + self.var_start, 0);
        for (col, datum) in row.iter().enumerate() {
            if datum.is_null() {
                out[start + col / 8] |= 1 << (col % 8);
                continue;
            }
            match (self.slots[col], datum) {
                (Slot::Fixed(off), Datum::Bool(b)) => out[start + off] = *b as u8,
                (Slot::Fixed(off), Datum::Int4(v)) => out[start + off..start + off + 4].copy_from_slice(&v.to_le_bytes()),
                (Slot::Fixed(off), Datum::Int8(v) | Datum::Time(v) | Datum::Timestamp(v) | Datum::TimestampTz(v)) => {
                    out[start + off..start + off + 8].copy_from_slice(&v.to_le_bytes())
                }
                (Slot::Fixed(off), Datum::Date(v)) => out[start + off..start + off + 4].copy_from_slice(&v.to_le_bytes()),
                (Slot::Fixed(off), Datum::Interval(iv)) => {
                    out[start + off..start + off + 8].copy_from_slice(&iv.micros.to_le_bytes());
                    out[start + off + 8..start + off + 12].copy_from_slice(&iv.days.to_le_bytes());
                    out[start + off + 12..start + off + 16].copy_from_slice(&iv.months.to_le_bytes());
                }
                (Slot::Fixed(off), Datum::Float8(v)) => {
                    out[start + off..start + off + 8].copy_from_slice(&v.to_bits().to_le_bytes())
                }
                (Slot::Fixed(off), Datum::Numeric(n)) => {
                    out[start + off..start + off + 16].copy_from_slice(&n.mantissa.to_le_bytes());
                    out[start + off + 16..start + off + 18].copy_from_slice(&n.scale.to_le_bytes());
                }
                (Slot::Var(_), Datum::Text(_)) => {}
                (Slot::Var(_), Datum::Array(a)) if DataType::Array(a.elem) == self.types[col] => {}
                _ => {
                    return Err(Error::internal(format!(
                        "value {datum:?} does not fit column {col} of type {}",
                        self.types[col].name()
                    )))
                }
            }
        }
        // Variable section, in column order.
        for (col, datum) in row.iter().enumerate() {
            if let (Slot::Var(_), Datum::Text(s)) = (self.slots[col], datum) {
                let len = u32::try_from(s.len()).map_err(|_| {
                    Error::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "string too long to store")
                })?;
                out.extend_from_slice(&len.to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
            if let (Slot::Var(_), Datum::Array(a)) = (self.slots[col], datum) {
                let len_at = out.len();
                out.extend_from_slice(&[0; 4]);
                encode_array(a, out)?;
                let len = u32::try_from(out.len() - len_at - 4)
                    .map_err(|_| Error::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "array too large to store"))?;
                out[len_at..len_at + 4].copy_from_slice(&len.to_le_bytes());
            }
        }
        Ok(())
    }

    /// Byte offset of a fixed-width column, `None` for a variable-width one.
    pub fn fixed_offset_of(&self, col: usize) -> Option<usize> {
        match self.slots[col] {
            Slot::Fixed(off) => Some(off),
            Slot::Var(_) => None,
        }
    }

    /// Index among the variable-width columns (for [`var_bytes`](Self::var_bytes)),
    /// `None` for a fixed-width column.
    pub fn var_index_of(&self, col: usize) -> Option<usize> {
        match self.slots[col] {
            Slot::Var(index) => Some(index),
            Slot::Fixed(_) => None,
        }
    }

    #[inline]
    pub fn is_null(&self, tuple: &[u8], col: usize) -> bool {
        tuple[col / 8] & (1 << (col % 8)) != 0
    }

    /// Decode one column without touching the others (except var columns before it).
    #[inline(always)]
    pub fn get(&self, tuple: &[u8], col: usize) -> Result<Datum> {
        match self.get_fixed(tuple, col) {
            Some(datum) => Ok(datum),
            None => self.get_general(tuple, col),
        }
    }

    /// Decode one column into `slot`. A scan reuses its row from tuple to tuple: when the
    /// slot already holds a value of the column's type, only the payload is written (a
    /// text's buffer is reused), instead of a whole `Datum` built on the stack and copied
    /// into the row (a store-forwarding stall per column per tuple) or a new allocation.
    #[inline(always)]
    pub fn assign(&self, tuple: &[u8], col: usize, slot: &mut Datum) -> Result<()> {
        if tuple.len() >= self.var_start && !self.is_null(tuple, col) {
            match (self.slots[col], self.types[col], &mut *slot) {
                (Slot::Fixed(off), DataType::Int4, Datum::Int4(v)) => {
                    *v = i32::from_le_bytes(fixed(tuple, off));
                    return Ok(());
                }
                (Slot::Fixed(off), DataType::Int8, Datum::Int8(v)) => {
                    *v = i64::from_le_bytes(fixed(tuple, off));
                    return Ok(());
                }
                (Slot::Fixed(off), DataType::Float8, Datum::Float8(v)) => {
                    *v = f64::from_bits(u64::from_le_bytes(fixed(tuple, off)));
                    return Ok(());
                }
                (Slot::Fixed(off), DataType::Bool, Datum::Bool(v)) => {
                    *v = tuple[off] != 0;
                    return Ok(());
                }
                (Slot::Var(index), ty, Datum::Text(text)) if !matches!(ty, DataType::Array(_)) => {
                    let bytes = self.var_bytes(tuple, index)?;
                    text.clear();
                    text.push_str(std::str::from_utf8(bytes).map_err(|_| corrupt())?);
                    return Ok(());
                }
                _ => {}
            }
        }
        *slot = self.get(tuple, col)?;
        Ok(())
    }

    /// The hot path of every scan, small enough to inline: a bool/int/float column, or
    /// `None` for anything else (then use [`get`](Self::get)). Returning a plain `Datum`
    /// rather than a `Result` through a call avoids a store-forwarding stall per tuple.
    #[inline(always)]
    pub fn get_fixed(&self, tuple: &[u8], col: usize) -> Option<Datum> {
        let Slot::Fixed(off) = self.slots[col] else { return None };
        if tuple.len() < self.var_start {
            return None;
        }
        if self.is_null(tuple, col) {
            return Some(Datum::Null);
        }
        Some(match self.types[col] {
            DataType::Bool => Datum::Bool(tuple[off] != 0),
            DataType::Int4 => Datum::Int4(i32::from_le_bytes(fixed(tuple, off))),
            DataType::Int8 => Datum::Int8(i64::from_le_bytes(fixed(tuple, off))),
            DataType::Float8 => Datum::Float8(f64::from_bits(u64::from_le_bytes(fixed(tuple, off)))),
            _ => return None,
        })
    }

    #[inline(never)]
    fn get_general(&self, tuple: &[u8], col: usize) -> Result<Datum> {
        if tuple.len() < self.var_start {
            return Err(corrupt());
        }
        if self.is_null(tuple, col) {
            return Ok(Datum::Null);
        }
        Ok(match (self.slots[col], self.types[col]) {
            (Slot::Fixed(off), DataType::Bool) => Datum::Bool(tuple[off] != 0),
            (Slot::Fixed(off), DataType::Int4) => Datum::Int4(i32::from_le_bytes(fixed(tuple, off))),
            (Slot::Fixed(off), DataType::Int8) => Datum::Int8(i64::from_le_bytes(fixed(tuple, off))),
            (Slot::Fixed(off), DataType::Float8) => Datum::Float8(f64::from_bits(u64::from_le_bytes(fixed(tuple, off)))),
            (Slot::Fixed(off), DataType::Date) => Datum::Date(i32::from_le_bytes(fixed(tuple, off))),
            (Slot::Fixed(off), DataType::Time) => Datum::Time(i64::from_le_bytes(fixed(tuple, off))),
            (Slot::Fixed(off), DataType::Timestamp) => Datum::Timestamp(i64::from_le_bytes(fixed(tuple, off))),
            (Slot::Fixed(off), DataType::TimestampTz) => Datum::TimestampTz(i64::from_le_bytes(fixed(tuple, off))),
            (Slot::Fixed(off), DataType::Interval) => Datum::Interval(Interval {
                micros: i64::from_le_bytes(fixed(tuple, off)),
                days: i32::from_le_bytes(fixed(tuple, off + 8)),
                months: i32::from_le_bytes(fixed(tuple, off + 12)),
            }),
            (Slot::Fixed(off), DataType::Numeric) => Datum::Numeric(Numeric {
                mantissa: i128::from_le_bytes(fixed(tuple, off)),
                scale: u16::from_le_bytes(fixed(tuple, off + 16)),
            }),
            (Slot::Var(index), DataType::Array(elem)) => decode_array(elem, self.var_bytes(tuple, index)?)?,
            (Slot::Var(index), _) => {
                let bytes = self.var_bytes(tuple, index)?;
                let text = std::str::from_utf8(bytes).map_err(|_| corrupt())?;
                Datum::Text(text.to_string())
            }
            _ => return Err(corrupt()),
        })
    }

    /// The int8 value of a fixed int8 column, without building a `Datum`.
    #[inline]
    pub fn get_i64(&self, tuple: &[u8], col: usize) -> Option<i64> {
        match self.slots[col] {
            Slot::Fixed(off) if !self.is_null(tuple, col) => Some(i64::from_le_bytes(fixed(tuple, off))),
            _ => None,
        }
    }

    #[inline(always)]
    fn fixed_offset(&self, col: usize) -> usize {
        match self.slots[col] {
            Slot::Fixed(off) => off,
            Slot::Var(_) => panic!("column {col} is not fixed-width"),
        }
    }

    /// A non-null int8 column read without a `Datum`. The caller checked the type and
    /// [`is_null`](Self::is_null); a short tuple panics (bounds check), never misreads.
    #[inline(always)]
    pub fn get_i64_unchecked(&self, tuple: &[u8], col: usize) -> i64 {
        i64::from_le_bytes(fixed(tuple, self.fixed_offset(col)))
    }

    /// A non-null int4 column; see [`get_i64_unchecked`](Self::get_i64_unchecked).
    #[inline(always)]
    pub fn get_i32(&self, tuple: &[u8], col: usize) -> i32 {
        i32::from_le_bytes(fixed(tuple, self.fixed_offset(col)))
    }

    /// A non-null float8 column; see [`get_i64_unchecked`](Self::get_i64_unchecked).
    #[inline(always)]
    pub fn get_f64(&self, tuple: &[u8], col: usize) -> f64 {
        f64::from_bits(u64::from_le_bytes(fixed(tuple, self.fixed_offset(col))))
    }

    /// The bytes of the `index`-th variable-width column.
    pub fn var_bytes<'a>(&self, tuple: &'a [u8], index: usize) -> Result<&'a [u8]> {
        let mut pos = self.var_start;
        // Null var columns store nothing; walk only the present ones.
        for (col, slot) in self.slots.iter().enumerate() {
            let Slot::Var(i) = *slot else { continue };
            if self.is_null(tuple, col) {
                if i == index {
                    return Ok(&[]);
                }
                continue;
            }
            let len_bytes: [u8; 4] = tuple.get(pos..pos + 4).ok_or_else(corrupt)?.try_into().map_err(|_| corrupt())?;
            let len = u32::from_le_bytes(len_bytes) as usize;
            let data = tuple.get(pos + 4..pos + 4 + len).ok_or_else(corrupt)?;
            if i == index {
                return Ok(data);
            }
            pos += 4 + len;
        }
        Err(corrupt())
    }

    /// The bytes of a variable-width column where they lie (`None` for NULL): a text key
    /// compared in place, without a `String` per tuple.
    pub fn var_column_bytes<'a>(&self, tuple: &'a [u8], col: usize) -> Result<Option<&'a [u8]>> {
        let Slot::Var(index) = self.slots[col] else {
            return Err(Error::internal(format!("column {col} is not variable-width")));
        };
        if tuple.len() < self.var_start {
            return Err(corrupt());
        }
        if self.is_null(tuple, col) {
            return Ok(None);
        }
        self.var_bytes(tuple, index).map(Some)
    }

    /// Decode every column.
    pub fn decode(&self, tuple: &[u8]) -> Result<Vec<Datum>> {
        let mut row = Vec::with_capacity(self.types.len());
        self.decode_into(tuple, &mut row)?;
        Ok(row)
    }

    /// Decode every column, appending to `row` (one pass over the var section).
    pub fn decode_into(&self, tuple: &[u8], row: &mut Vec<Datum>) -> Result<()> {
        self.decode_prefix_into(tuple, row, self.types.len())
    }

    /// Decode the first `count` columns (at most all), appending to `row`.
    pub fn decode_prefix_into(&self, tuple: &[u8], row: &mut Vec<Datum>, count: usize) -> Result<()> {
        if tuple.len() < self.var_start {
            return Err(corrupt());
        }
        let mut pos = self.var_start;
        for col in 0..count.min(self.types.len()) {
            if self.is_null(tuple, col) {
                row.push(Datum::Null);
                continue;
            }
            match self.slots[col] {
                Slot::Fixed(_) => row.push(self.get(tuple, col)?),
                Slot::Var(_) => {
                    let len_bytes: [u8; 4] =
                        tuple.get(pos..pos + 4).ok_or_else(corrupt)?.try_into().map_err(|_| corrupt())?;
                    let len = u32::from_le_bytes(len_bytes) as usize;
                    let data = tuple.get(pos + 4..pos + 4 + len).ok_or_else(corrupt)?;
                    if let DataType::Array(elem) = self.types[col] {
                        row.push(decode_array(elem, data)?);
                    } else {
                        let text = std::str::from_utf8(data).map_err(|_| corrupt())?;
                        row.push(Datum::Text(text.to_string()));
                    }
                    pos += 4 + len;
                }
            }
        }
        Ok(())
    }
}

/// An array's bytes: element count, then the elements as one tuple (module comment).
pub fn encode_array(array: &Array, out: &mut Vec<u8>) -> Result<()> {
    let count = u32::try_from(array.items.len())
        .map_err(|_| Error::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "array too large to store"))?;
    out.extend_from_slice(&count.to_le_bytes());
    RowLayout::new(&vec![array.elem.data_type(); array.items.len()]).encode(&array.items, out)
}

/// The inverse of [`encode_array`]; bytes that do not fit are corruption, never a panic.
pub fn decode_array(elem: ElemType, bytes: &[u8]) -> Result<Datum> {
    let count: [u8; 4] = bytes.get(..4).ok_or_else(corrupt)?.try_into().map_err(|_| corrupt())?;
    let count = u32::from_le_bytes(count) as usize;
    let rest = &bytes[4..];
    // Each element takes at least one bitmap bit: a bogus count cannot allocate much.
    if count.div_ceil(8) > rest.len() {
        return Err(corrupt());
    }
    let items = RowLayout::new(&vec![elem.data_type(); count]).decode(rest)?;
    Ok(Datum::Array(Box::new(Array { elem, items })))
}

#[inline]
fn fixed<const N: usize>(tuple: &[u8], off: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&tuple[off..off + N]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn datum_for(ty: DataType) -> BoxedStrategy<Datum> {
        let value = match ty {
            DataType::Bool => any::<bool>().prop_map(Datum::Bool).boxed(),
            DataType::Int4 => any::<i32>().prop_map(Datum::Int4).boxed(),
            DataType::Int8 => any::<i64>().prop_map(Datum::Int8).boxed(),
            DataType::Float8 => any::<f64>().prop_map(Datum::Float8).boxed(),
            DataType::Numeric => (any::<i128>(), 0u16..40)
                .prop_map(|(mantissa, scale)| Datum::Numeric(Numeric { mantissa, scale }))
                .boxed(),
            DataType::Text => ".{0,40}".prop_map(Datum::Text).boxed(),
            DataType::Date => any::<i32>().prop_map(Datum::Date).boxed(),
            DataType::Time => any::<i64>().prop_map(Datum::Time).boxed(),
            DataType::Timestamp => any::<i64>().prop_map(Datum::Timestamp).boxed(),
            DataType::TimestampTz => any::<i64>().prop_map(Datum::TimestampTz).boxed(),
            DataType::Interval => (any::<i32>(), any::<i32>(), any::<i64>())
                .prop_map(|(m, d, us)| Datum::Interval(Interval::new(m, d, us)))
                .boxed(),
            DataType::Array(elem) => prop::collection::vec(datum_for(elem.data_type()), 0..12)
                .prop_map(move |items| Datum::Array(Box::new(Array { elem, items })))
                .boxed(),
        };
        prop_oneof![1 => Just(Datum::Null), 4 => value].boxed()
    }

    fn schema_and_row() -> impl Strategy<Value = (Vec<DataType>, Vec<Datum>)> {
        let ty = prop_oneof![
            Just(DataType::Bool),
            Just(DataType::Int4),
            Just(DataType::Int8),
            Just(DataType::Float8),
            Just(DataType::Numeric),
            Just(DataType::Text),
            Just(DataType::Date),
            Just(DataType::Time),
            Just(DataType::Timestamp),
            Just(DataType::TimestampTz),
            Just(DataType::Interval),
            Just(DataType::Array(ElemType::Int4)),
            Just(DataType::Array(ElemType::Text)),
            Just(DataType::Array(ElemType::Float8)),
            Just(DataType::Array(ElemType::Numeric)),
            Just(DataType::Array(ElemType::Interval)),
            Just(DataType::Array(ElemType::Bool))
        ];
        prop::collection::vec(ty, 0..20).prop_flat_map(|types| {
            let row: Vec<_> = types.iter().map(|t| datum_for(*t)).collect();
            (Just(types), row)
        })
    }

    fn same(a: &Datum, b: &Datum) -> bool {
        match (a, b) {
            (Datum::Float8(x), Datum::Float8(y)) => x.to_bits() == y.to_bits(),
            (Datum::Array(x), Datum::Array(y)) => {
                x.elem == y.elem && x.items.len() == y.items.len() && x.items.iter().zip(&y.items).all(|(a, b)| same(a, b))
            }
            _ => a == b,
        }
    }

    proptest! {
        #[test]
        fn encode_decode_round_trip((types, row) in schema_and_row()) {
            let layout = RowLayout::new(&types);
            let mut bytes = Vec::new();
            layout.encode(&row, &mut bytes).unwrap();
            let decoded = layout.decode(&bytes).unwrap();
            prop_assert_eq!(decoded.len(), row.len());
            for (col, (a, b)) in decoded.iter().zip(&row).enumerate() {
                prop_assert!(same(a, b), "col {}: {:?} vs {:?}", col, a, b);
                let single = layout.get(&bytes, col).unwrap();
                prop_assert!(same(&single, b));
            }
        }

        #[test]
        fn assign_over_the_previous_row_decodes_like_get(
            (types, rows) in schema_and_row().prop_flat_map(|(types, first)| {
                let more: Vec<_> = types.iter().map(|t| datum_for(*t)).collect();
                (Just(types), (Just(first), more, prop::collection::vec(any::<bool>(), 0..20)))
            })
        ) {
            // A scan's row keeps the previous tuple's values (or, for a column whose
            // previous value was NULL or of a different shape, anything): assigning the
            // next tuple's columns over it must give exactly what `get` gives.
            let (first, second, shuffle) = rows;
            let layout = RowLayout::new(&types);
            let mut slots = first.clone();
            // Some slots start as values of another type: a layout must not read them as its own.
            for (slot, swap) in slots.iter_mut().zip(shuffle) {
                if swap {
                    *slot = Datum::Int4(7);
                }
            }
            for row in [&first, &second] {
                let mut bytes = Vec::new();
                layout.encode(row, &mut bytes).unwrap();
                for (col, slot) in slots.iter_mut().enumerate() {
                    layout.assign(&bytes, col, slot).unwrap();
                    prop_assert!(same(slot, &row[col]), "col {}: {:?} vs {:?}", col, slot, row[col]);
                }
            }
        }

        #[test]
        fn truncated_tuples_are_errors_not_panics((types, row) in schema_and_row(), cut in 0usize..64) {
            let layout = RowLayout::new(&types);
            let mut bytes = Vec::new();
            layout.encode(&row, &mut bytes).unwrap();
            if cut < bytes.len() {
                let short = &bytes[..bytes.len() - cut - 1];
                let _ = layout.decode(short);
            }
        }
    }
}
