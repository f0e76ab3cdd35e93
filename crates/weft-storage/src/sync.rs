//! Every lock and atomic the crate uses comes from here, so that a model
//! checker (loom, shuttle) can be swapped in later in one place.

pub(crate) use parking_lot::{Condvar, Mutex, RwLock};
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
pub(crate) use std::sync::Arc;
