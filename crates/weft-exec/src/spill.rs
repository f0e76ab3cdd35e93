//! Temp-file records shared by the operators that spill (hash aggregation, hash join):
//! an exact little-endian encoding of datums, its decoder, and disk counters.
//!
//! A datum is a tag byte and its value: integers as they are, floats by their bits (so
//! `-0`, NaN payloads and infinities come back as they went), numerics as mantissa and
//! scale (so `1.00` stays `1.00`), text as length and bytes. A value read back compares,
//! hashes and prints exactly as the one written.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use weft_common::numeric::Numeric;
use weft_common::{Datum, Error, Result};

/// Bytes on disk now, at most, and in total.
#[derive(Default)]
pub(crate) struct DiskCounters {
    current: AtomicU64,
    peak: AtomicU64,
    written: AtomicU64,
    files: AtomicU64,
}

impl DiskCounters {
    pub fn wrote(&self, bytes: u64) {
        self.written.fetch_add(bytes, Ordering::Relaxed);
        let now = self.current.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    pub fn removed(&self, bytes: u64) {
        self.current.fetch_sub(bytes, Ordering::Relaxed);
    }

    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    pub fn add_file(&self) {
        self.files.fetch_add(1, Ordering::Relaxed);
    }

    pub fn files(&self) -> u64 {
        self.files.load(Ordering::Relaxed)
    }
}

pub(crate) fn io_error(path: &Path, e: &std::io::Error) -> Error {
    Error::io(format!("could not access temporary file \"{}\"", path.display()), e)
}

pub(crate) fn encode_datum(out: &mut Vec<u8>, d: &Datum) {
    match d {
        Datum::Null => out.push(0),
        Datum::Bool(v) => out.extend_from_slice(&[1, *v as u8]),
        Datum::Int4(v) => {
            out.push(2);
            out.extend_from_slice(&v.to_le_bytes());
        }
        Datum::Int8(v) => {
            out.push(3);
            out.extend_from_slice(&v.to_le_bytes());
        }
        Datum::Float8(v) => {
            out.push(4);
            out.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        Datum::Numeric(n) => {
            out.push(5);
            encode_numeric(out, n);
        }
        Datum::Text(s) => encode_text(out, s),
        Datum::Date(v) => {
            out.push(7);
            out.extend_from_slice(&v.to_le_bytes());
        }
        Datum::Time(v) | Datum::Timestamp(v) | Datum::TimestampTz(v) => {
            out.push(match d {
                Datum::Time(_) => 8,
                Datum::Timestamp(_) => 9,
                _ => 10,
            });
            out.extend_from_slice(&v.to_le_bytes());
        }
        Datum::Interval(iv) => {
            out.push(11);
            out.extend_from_slice(&iv.months.to_le_bytes());
            out.extend_from_slice(&iv.days.to_le_bytes());
            out.extend_from_slice(&iv.micros.to_le_bytes());
        }
        Datum::Array(a) => {
            // The element type, then the tuple format's array bytes (`weft_common::tuple`).
            out.push(12);
            out.push(a.elem as u8);
            let len_at = out.len();
            out.extend_from_slice(&[0; 4]);
            // Only an array of over 4 GiB fails to encode; a spill record cannot hold it.
            if weft_common::tuple::encode_array(a, out).is_ok() {
                let len = (out.len() - len_at - 4) as u32;
                out[len_at..len_at + 4].copy_from_slice(&len.to_le_bytes());
            }
        }
    }
}

/// A text datum's encoding, from a borrowed string.
pub(crate) fn encode_text(out: &mut Vec<u8>, s: &str) {
    out.push(6);
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

pub(crate) fn encode_numeric(out: &mut Vec<u8>, n: &Numeric) {
    out.extend_from_slice(&{ n.mantissa }.to_le_bytes());
    out.extend_from_slice(&{ n.scale }.to_le_bytes());
}

pub(crate) fn encode_optional_numeric(out: &mut Vec<u8>, n: &Option<Numeric>) {
    match n {
        None => out.push(0),
        Some(n) => {
            out.push(1);
            encode_numeric(out, n);
        }
    }
}

pub(crate) fn corrupt() -> Error {
    Error::internal("corrupt temporary file record")
}

/// Reads one record's body.
pub(crate) struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    pub fn new(buf: &'a [u8]) -> Decoder<'a> {
        Decoder { buf, pos: 0 }
    }

    pub fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        let bytes = self.buf.get(self.pos..self.pos + N).ok_or_else(corrupt)?;
        self.pos += N;
        Ok(bytes.try_into().expect("N bytes"))
    }

    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take::<1>()?[0])
    }

    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.take()?))
    }

    pub fn i128(&mut self) -> Result<i128> {
        Ok(i128::from_le_bytes(self.take()?))
    }

    pub fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_bits(u64::from_le_bytes(self.take()?)))
    }

    pub fn bool(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(corrupt()),
        }
    }

    pub fn hash(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take()?))
    }

    pub fn numeric(&mut self) -> Result<Numeric> {
        let mantissa = self.i128()?;
        let scale = u16::from_le_bytes(self.take()?);
        Ok(Numeric { mantissa, scale })
    }

    pub fn optional_numeric(&mut self) -> Result<Option<Numeric>> {
        Ok(if self.bool()? { Some(self.numeric()?) } else { None })
    }

    pub fn datum(&mut self) -> Result<Datum> {
        Ok(match self.u8()? {
            0 => Datum::Null,
            1 => Datum::Bool(self.bool()?),
            2 => Datum::Int4(i32::from_le_bytes(self.take()?)),
            3 => Datum::Int8(self.i64()?),
            4 => Datum::Float8(self.f64()?),
            5 => Datum::Numeric(self.numeric()?),
            6 => {
                let len = u32::from_le_bytes(self.take()?) as usize;
                let bytes = self.buf.get(self.pos..self.pos + len).ok_or_else(corrupt)?;
                self.pos += len;
                Datum::Text(String::from_utf8(bytes.to_vec()).map_err(|_| corrupt())?)
            }
            7 => Datum::Date(i32::from_le_bytes(self.take()?)),
            8 => Datum::Time(self.i64()?),
            9 => Datum::Timestamp(self.i64()?),
            10 => Datum::TimestampTz(self.i64()?),
            11 => {
                let months = i32::from_le_bytes(self.take()?);
                let days = i32::from_le_bytes(self.take()?);
                Datum::Interval(weft_common::datetime::Interval::new(months, days, self.i64()?))
            }
            12 => {
                let elem = weft_common::types::ElemType::from_u8(self.u8()?).ok_or_else(corrupt)?;
                let len = u32::from_le_bytes(self.take()?) as usize;
                let bytes = self.buf.get(self.pos..self.pos + len).ok_or_else(corrupt)?;
                self.pos += len;
                weft_common::tuple::decode_array(elem, bytes)?
            }
            _ => return Err(corrupt()),
        })
    }

    pub fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }
}

