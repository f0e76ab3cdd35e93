//! Spill files of a hash aggregate: a directory per aggregate, one file per writer and
//! partition, records of partial aggregate states.
//!
//! A record is `u32` body length, then the body: the key's `u64` hash, the key's datums,
//! the group's accumulator states. Everything is little-endian and exact: integers and
//! i128 sums as they are, floats by their bits (so `-0`, NaN payloads and infinities come
//! back as they went), numerics as mantissa and scale (so `1.00` stays `1.00`), text as
//! length and bytes. A state read back merges with others exactly as the in-memory one
//! would have.
//!
//! The directory (`<temp_dir>/hashagg.<pid>.<n>`) is removed when its last owner drops
//! it, whatever ends the statement; a partition file is removed as soon as it has been
//! read back, so the disk holds at most what is still to be read.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use weft_common::{Datum, Error, Result};
use weft_sort::TempFileSet;

use super::distinct::DistinctValues;
use super::stats::{ExactMoments, FloatMoments, RegrMoments, U256};
use super::{Accumulator, ArrayValues, SortedValues};
pub(super) use crate::spill::{DiskCounters, Decoder};
use crate::spill::{corrupt, encode_datum, encode_optional_numeric, encode_text, io_error};


/// The temp directory of one aggregate (a `weft_sort::TempFileSet`: removed on drop).
pub(super) struct SpillDir {
    files: TempFileSet,
    pub counters: DiskCounters,
}

impl SpillDir {
    pub fn create(parent: &Path) -> Result<SpillDir> {
        Ok(SpillDir { files: TempFileSet::create_named(parent, "hashagg")?, counters: DiskCounters::default() })
    }

    fn new_file(&self, level: usize, partition: usize) -> Result<(File, PathBuf)> {
        let (file, path) = self.files.new_file(&format!("l{level}.p{partition}"))?;
        self.counters.add_file();
        Ok((file, Arc::unwrap_or_clone(path)))
    }
}

/// A finished partition file, waiting to be read back.
pub(super) struct SpillFile {
    dir: Arc<SpillDir>,
    file: File,
    path: PathBuf,
    pub bytes: u64,
    pub records: u64,
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        self.dir.counters.removed(self.bytes);
    }
}

impl SpillFile {
    /// Read the records back, with a buffer of `buffer` bytes; the file is removed when
    /// the reader is dropped.
    pub fn reader(self, buffer: usize) -> Result<SpillReader> {
        let file = self.file.try_clone().map_err(|e| io_error(&self.path, &e))?;
        let mut reader = BufReader::with_capacity(buffer, file);
        // The clone shares the file offset, which writing left at the end.
        reader.seek(SeekFrom::Start(0)).map_err(|e| io_error(&self.path, &e))?;
        let remaining = self.records;
        Ok(SpillReader { reader, remaining, body: Vec::new(), source: self })
    }
}

pub(super) struct SpillReader {
    reader: BufReader<File>,
    remaining: u64,
    body: Vec<u8>,
    source: SpillFile,
}

impl SpillReader {
    /// The next record's body.
    pub fn next(&mut self) -> Result<Option<Decoder<'_>>> {
        if self.remaining == 0 {
            return Ok(None);
        }
        self.remaining -= 1;
        let mut len = [0u8; 4];
        self.reader.read_exact(&mut len).map_err(|e| io_error(&self.source.path, &e))?;
        let len = u32::from_le_bytes(len) as usize;
        self.body.resize(len, 0);
        self.reader.read_exact(&mut self.body).map_err(|e| io_error(&self.source.path, &e))?;
        Ok(Some(Decoder::new(&self.body)))
    }

    /// Bytes this reader holds (its buffer and its largest record).
    pub fn memory(&self) -> usize {
        self.reader.capacity() + self.body.capacity()
    }
}

/// One partition's file being written.
struct PartitionWriter {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    bytes: u64,
    records: u64,
}

impl PartitionWriter {
    fn write_out(&mut self, dir: &SpillDir, data: &[u8]) -> Result<()> {
        self.file.write_all(data).map_err(|e| io_error(&self.path, &e))?;
        self.bytes += data.len() as u64;
        dir.counters.wrote(data.len() as u64);
        Ok(())
    }
}

/// Which partition a hash falls in at `level`: the level's slice of `bits` bits, taken
/// from the top of the hash down.
#[inline]
pub(super) fn partition_of(hash: u64, level: usize, bits: u32) -> usize {
    let shift = 64 - bits * (level as u32 + 1);
    ((hash >> shift) & ((1u64 << bits) - 1)) as usize
}

/// The files of one writer (a participant, or a combine task) at one level: records
/// go to the file of their hash's partition, each through a buffer of `buffer` bytes
/// (allocated on the partition's first record).
pub(super) struct PartitionWriters {
    dir: Arc<SpillDir>,
    level: usize,
    bits: u32,
    buffer: usize,
    parts: Vec<Option<PartitionWriter>>,
    record: Vec<u8>,
    /// Records written.
    pub records: u64,
}

impl PartitionWriters {
    pub fn new(dir: Arc<SpillDir>, level: usize, bits: u32, buffer: usize) -> PartitionWriters {
        let parts = (0..1usize << bits).map(|_| None).collect();
        PartitionWriters { dir, level, bits, buffer, parts, record: Vec::new(), records: 0 }
    }

    /// Bytes held in write buffers.
    pub fn memory(&self) -> usize {
        self.parts.iter().flatten().map(|p| p.buf.capacity()).sum::<usize>() + self.record.capacity()
    }

    pub fn write(&mut self, hash: u64, key: &[Datum], states: &[Accumulator]) -> Result<()> {
        let partition = partition_of(hash, self.level, self.bits);
        let record = &mut self.record;
        record.clear();
        record.extend_from_slice(&[0; 4]);
        record.extend_from_slice(&hash.to_le_bytes());
        for d in key {
            encode_datum(record, d);
        }
        for s in states {
            encode_state(record, s);
        }
        let len = u32::try_from(record.len() - 4).map_err(|_| Error::internal("aggregate spill record over 4 GB"))?;
        record[..4].copy_from_slice(&len.to_le_bytes());
        let part = match &mut self.parts[partition] {
            Some(part) => part,
            slot @ None => {
                let (file, path) = self.dir.new_file(self.level, partition)?;
                slot.insert(PartitionWriter { file, path, buf: Vec::with_capacity(self.buffer), bytes: 0, records: 0 })
            }
        };
        if part.buf.len() + record.len() > self.buffer {
            let buf = std::mem::take(&mut part.buf);
            part.write_out(&self.dir, &buf)?;
            part.buf = buf;
            part.buf.clear();
        }
        if record.len() > self.buffer {
            part.write_out(&self.dir, record)?;
        } else {
            part.buf.extend_from_slice(record);
        }
        part.records += 1;
        self.records += 1;
        Ok(())
    }

    /// Write out every buffer; the finished files by partition.
    pub fn finish(self) -> Result<Vec<(usize, SpillFile)>> {
        let mut out = Vec::new();
        for (partition, part) in self.parts.into_iter().enumerate() {
            let Some(mut part) = part else { continue };
            let buf = std::mem::take(&mut part.buf);
            part.write_out(&self.dir, &buf)?;
            out.push((
                partition,
                SpillFile { dir: self.dir.clone(), file: part.file, path: part.path, bytes: part.bytes, records: part.records },
            ));
        }
        Ok(out)
    }
}

fn encode_state(out: &mut Vec<u8>, s: &Accumulator) {
    match s {
        Accumulator::Count(n) => {
            out.push(0);
            out.extend_from_slice(&n.to_le_bytes());
        }
        Accumulator::SumInt { sum, any, .. } => {
            out.push(1);
            out.extend_from_slice(&sum.to_le_bytes());
            out.push(*any as u8);
        }
        Accumulator::SumFloat { sum, any } => {
            out.push(2);
            out.extend_from_slice(&sum.to_bits().to_le_bytes());
            out.push(*any as u8);
        }
        Accumulator::SumNumeric { sum } => {
            out.push(3);
            encode_optional_numeric(out, sum);
        }
        Accumulator::AvgInt { sum, count } => {
            out.push(4);
            out.extend_from_slice(&sum.to_le_bytes());
            out.extend_from_slice(&count.to_le_bytes());
        }
        Accumulator::AvgFloat(moments) => {
            out.push(5);
            encode_floats(out, &[moments.n, moments.sx, moments.sxx]);
        }
        Accumulator::AvgNumeric { sum, count } => {
            out.push(6);
            encode_optional_numeric(out, sum);
            out.extend_from_slice(&count.to_le_bytes());
        }
        // A min/max that saw no value is written as NULL (it never holds a NULL value).
        Accumulator::Min(v) => {
            out.push(7);
            encode_datum(out, v.as_ref().unwrap_or(&Datum::Null));
        }
        Accumulator::Max(v) => {
            out.push(8);
            encode_datum(out, v.as_ref().unwrap_or(&Datum::Null));
        }
        Accumulator::StringAgg(state) => {
            out.push(9);
            match state {
                None => out.push(0),
                Some((text, first_delimiter)) => {
                    out.push(1);
                    encode_text(out, text);
                    out.extend_from_slice(&(*first_delimiter as u64).to_le_bytes());
                }
            }
        }
        Accumulator::ArrayAgg(values) => {
            out.push(13);
            out.extend_from_slice(&(values.rows.len() as u64).to_le_bytes());
            for (keys, value) in &values.rows {
                keys.iter().for_each(|k| encode_datum(out, k));
                encode_datum(out, value);
            }
        }
        Accumulator::StringAggSorted(sorted) => {
            out.push(10);
            out.extend_from_slice(&(sorted.rows.len() as u64).to_le_bytes());
            for (keys, delimiter, value) in &sorted.rows {
                keys.iter().for_each(|k| encode_datum(out, k));
                match delimiter {
                    Some(d) => encode_text(out, d),
                    None => encode_datum(out, &Datum::Null),
                }
                encode_text(out, value);
            }
        }
        Accumulator::Distinct(distinct) => {
            out.push(11);
            match &distinct.delimiter {
                Some(d) => encode_text(out, d),
                None => encode_datum(out, &Datum::Null),
            }
            out.extend_from_slice(&(distinct.values.len() as u64).to_le_bytes());
            distinct.values.iter().for_each(|v| encode_datum(out, &v.0));
        }
        Accumulator::Moments { moments, .. } => {
            out.push(12);
            out.extend_from_slice(&moments.n.to_le_bytes());
            encode_optional_numeric(out, &Some(moments.sum));
            out.extend_from_slice(&moments.sum_sq.high.to_le_bytes());
            out.extend_from_slice(&moments.sum_sq.low.to_le_bytes());
            out.extend_from_slice(&moments.sum_sq_scale.to_le_bytes());
        }
        Accumulator::FloatMoments { moments, .. } => {
            out.push(13);
            encode_floats(out, &[moments.n, moments.sx, moments.sxx]);
        }
        Accumulator::Bits { value, .. } => {
            out.push(14);
            out.push(value.is_some() as u8);
            out.extend_from_slice(&value.unwrap_or(0).to_le_bytes());
        }
        Accumulator::Regr { moments: m, .. } => {
            out.push(15);
            encode_floats(out, &[m.n, m.sx, m.sxx, m.sy, m.syy, m.sxy]);
        }
        // The kind, direction and order come from the call (the template); the direct
        // arguments are written, as they may have come from the group's first row.
        Accumulator::OrderedSet(set) => {
            out.push(16);
            encode_direct(out, set.direct.as_deref());
            out.extend_from_slice(&(set.values.len() as u64).to_le_bytes());
            set.values.iter().for_each(|v| encode_datum(out, v));
        }
        Accumulator::Hypothetical(rank) => {
            out.push(17);
            encode_direct(out, rank.row.as_deref());
            for n in [rank.before, rank.peers, rank.total, rank.earlier.len() as i64] {
                out.extend_from_slice(&n.to_le_bytes());
            }
            rank.earlier.iter().flatten().for_each(|v| encode_datum(out, v));
        }
    }
}

/// Direct arguments: their count (−1: not known yet), then the values.
fn encode_direct(out: &mut Vec<u8>, direct: Option<&[Datum]>) {
    out.extend_from_slice(&direct.map_or(-1, |d| d.len() as i64).to_le_bytes());
    direct.unwrap_or_default().iter().for_each(|v| encode_datum(out, v));
}

/// Floats by their bits: NaN and infinities of a spread come back as they went.
fn encode_floats(out: &mut Vec<u8>, values: &[f64]) {
    values.iter().for_each(|v| out.extend_from_slice(&v.to_bits().to_le_bytes()));
}

impl Decoder<'_> {
    fn direct(&mut self) -> Result<Option<Vec<Datum>>> {
        match self.i64()? {
            -1 => Ok(None),
            n if n >= 0 => (0..n).map(|_| self.datum()).collect::<Result<Vec<_>>>().map(Some),
            _ => Err(corrupt()),
        }
    }

    fn text(&mut self) -> Result<String> {
        match self.datum()? {
            Datum::Text(text) => Ok(text),
            _ => Err(corrupt()),
        }
    }

    /// A state of the same kind as `template` (which supplies what is not written: the
    /// result type of an integer sum).
    pub fn state(&mut self, template: &Accumulator) -> Result<Accumulator> {
        let tag = self.u8()?;
        let state = match (tag, template) {
            (0, Accumulator::Count(_)) => Accumulator::Count(self.i64()?),
            (1, Accumulator::SumInt { result, .. }) => {
                Accumulator::SumInt { sum: self.i128()?, any: self.bool()?, result: *result }
            }
            (2, Accumulator::SumFloat { .. }) => Accumulator::SumFloat { sum: self.f64()?, any: self.bool()? },
            (3, Accumulator::SumNumeric { .. }) => Accumulator::SumNumeric { sum: self.optional_numeric()? },
            (4, Accumulator::AvgInt { .. }) => Accumulator::AvgInt { sum: self.i128()?, count: self.i64()? },
            (5, Accumulator::AvgFloat(_)) => Accumulator::AvgFloat(FloatMoments { n: self.f64()?, sx: self.f64()?, sxx: self.f64()? }),
            (6, Accumulator::AvgNumeric { .. }) => {
                Accumulator::AvgNumeric { sum: self.optional_numeric()?, count: self.i64()? }
            }
            (7, Accumulator::Min(_)) => Accumulator::Min(Some(self.datum()?).filter(|d| !d.is_null())),
            (8, Accumulator::Max(_)) => Accumulator::Max(Some(self.datum()?).filter(|d| !d.is_null())),
            (9, Accumulator::StringAgg(_)) => Accumulator::StringAgg(match self.bool()? {
                false => None,
                true => Some((self.text()?, self.i64()? as usize)),
            }),
            (10, Accumulator::StringAggSorted(template)) => {
                let mut sorted = SortedValues::empty(template.order.clone());
                for _ in 0..self.i64()? {
                    let keys = (0..template.order.len()).map(|_| self.datum()).collect::<Result<Vec<_>>>()?;
                    let delimiter = match self.datum()? {
                        Datum::Text(d) => Some(d),
                        _ => None,
                    };
                    sorted.push(keys, delimiter, self.text()?);
                }
                Accumulator::StringAggSorted(sorted)
            }
            (13, Accumulator::ArrayAgg(template)) => {
                let mut values = ArrayValues { elem: template.elem, order: template.order.clone(), rows: Vec::new(), bytes: 0 };
                for _ in 0..self.i64()? {
                    let keys = (0..template.order.len()).map(|_| self.datum()).collect::<Result<Vec<_>>>()?;
                    values.push(keys, self.datum()?);
                }
                Accumulator::ArrayAgg(Box::new(values))
            }
            (11, Accumulator::Distinct(template)) => {
                let mut distinct = DistinctValues::new((*template.empty).clone());
                distinct.delimiter = match self.datum()? {
                    Datum::Text(d) => Some(d),
                    _ => None,
                };
                for _ in 0..self.i64()? {
                    distinct.insert(self.datum()?);
                }
                Accumulator::Distinct(Box::new(distinct))
            }
            (12, Accumulator::Moments { spread, .. }) => {
                let n = self.i64()?;
                let Some(sum) = self.optional_numeric()? else {
                    return Err(corrupt());
                };
                let sum_sq = U256 { high: self.i128()? as u128, low: self.i128()? as u128 };
                let sum_sq_scale = u16::from_le_bytes(self.take()?);
                Accumulator::Moments { moments: Box::new(ExactMoments { n, sum, sum_sq, sum_sq_scale }), spread: *spread }
            }
            (13, Accumulator::FloatMoments { spread, .. }) => Accumulator::FloatMoments {
                moments: FloatMoments { n: self.f64()?, sx: self.f64()?, sxx: self.f64()? },
                spread: *spread,
            },
            (14, Accumulator::Bits { op, result, .. }) => {
                let present = self.bool()?;
                let bits = self.i64()?;
                Accumulator::Bits { value: present.then_some(bits), op: *op, result: *result }
            }
            (15, Accumulator::Regr { output, .. }) => Accumulator::Regr {
                moments: RegrMoments {
                    n: self.f64()?,
                    sx: self.f64()?,
                    sxx: self.f64()?,
                    sy: self.f64()?,
                    syy: self.f64()?,
                    sxy: self.f64()?,
                },
                output: *output,
            },
            (16, Accumulator::OrderedSet(template)) => {
                let mut set = template.emptied();
                if let Some(direct) = self.direct()? {
                    set.set_direct(direct);
                }
                for _ in 0..self.i64()? {
                    set.push(self.datum()?);
                }
                Accumulator::OrderedSet(Box::new(set))
            }
            (17, Accumulator::Hypothetical(template)) => {
                let mut rank = template.emptied();
                if let Some(row) = self.direct()? {
                    rank.set_direct(row);
                }
                (rank.before, rank.peers, rank.total) = (self.i64()?, self.i64()?, self.i64()?);
                let width = rank.order.len();
                for _ in 0..self.i64()? {
                    let keys = (0..width).map(|_| self.datum()).collect::<Result<Vec<_>>>()?;
                    rank.push_earlier(keys);
                }
                Accumulator::Hypothetical(Box::new(rank))
            }
            _ => return Err(corrupt()),
        };
        Ok(state)
    }

}

#[cfg(test)]
pub(super) fn encode_for_test(key: &[Datum], states: &[Accumulator]) -> Vec<u8> {
    let mut out = Vec::new();
    for d in key {
        encode_datum(&mut out, d);
    }
    for s in states {
        encode_state(&mut out, s);
    }
    out
}
