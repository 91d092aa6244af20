//! `Dictionary`: a two-way map between names and dense `u32` ids.
//!
//! All names live in one string buffer; the hash index stores only ids and hashes the buffer slice, so
//! id -> name is a slice and name -> id is one hash probe, without a second copy of every string.

use hashbrown::HashTable;
use serde::{Deserialize, Deserializer, Serialize};
use std::hash::BuildHasher;

use crate::GraphError;

/// The longest name accepted (bytes). Longer "concepts" are almost surely a malformed line.
pub const MAX_NAME_LEN: usize = 4096;

type Hasher = foldhash::fast::FixedState;

/// Names <-> dense ids `0..len()`, in insertion order.
#[derive(Clone, Default, Serialize)]
pub struct Dictionary {
    bytes: String,
    /// `ends[i]` is the end of name `i` in `bytes`; name `i` starts at `ends[i - 1]` (or 0).
    ends: Vec<u32>,
    #[serde(skip)]
    index: HashTable<u32>,
}

impl Dictionary {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The name of `id`. Panics if `id` is out of range (ids come from this dictionary).
    pub fn name(&self, id: u32) -> &str {
        let i = id as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }

    /// The id of `name`, if present. O(1).
    pub fn get(&self, name: &str) -> Option<u32> {
        let hash = hash(name);
        self.index.find(hash, |&id| self.name(id) == name).copied()
    }

    /// The id of `name`, inserting it if new.
    pub fn intern(&mut self, name: &str) -> Result<u32, GraphError> {
        let hash = hash(name);
        if let Some(&id) = self.index.find(hash, |&id| self.name(id) == name) {
            return Ok(id);
        }
        if name.len() > MAX_NAME_LEN {
            return Err(GraphError::NameTooLong {
                len: name.len(),
                limit: MAX_NAME_LEN,
            });
        }
        let id = u32::try_from(self.ends.len())
            .ok()
            .filter(|&id| id < u32::MAX)
            .ok_or(GraphError::TooMany {
                what: "names",
                limit: u32::MAX as u64 - 1,
            })?;
        let end =
            u32::try_from(self.bytes.len() + name.len()).map_err(|_| GraphError::TooMany {
                what: "bytes of names",
                limit: u32::MAX as u64,
            })?;
        self.bytes.push_str(name);
        self.ends.push(end);
        let (bytes, ends) = (&self.bytes, &self.ends);
        self.index
            .insert_unique(hash, id, |&other| hash_of(bytes, ends, other));
        Ok(id)
    }

    /// Iterates `(id, name)` in id order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (u32, &str)> + '_ {
        (0..self.ends.len() as u32).map(move |id| (id, self.name(id)))
    }

    /// The concatenated names and the end offset of each.
    pub fn parts(&self) -> (&str, &[u32]) {
        (&self.bytes, &self.ends)
    }

    /// Heap bytes used by the names and the index.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.ends.capacity() * 4 + self.index.capacity() * 4
    }

    /// A dictionary from its buffer and end offsets, rebuilding the index; fails if they are
    /// inconsistent (e.g. a crafted snapshot) or repeat a name, so that `name` can never panic.
    pub fn from_parts(bytes: String, mut ends: Vec<u32>) -> Result<Self, GraphError> {
        // A decoder grows `ends` by doubling: give the slack back.
        ends.shrink_to_fit();
        let mut prev = 0usize;
        for &end in &ends {
            let end = end as usize;
            if end < prev || end > bytes.len() || !bytes.is_char_boundary(end) {
                return Err(GraphError::Inconsistent(
                    "dictionary offsets out of order".into(),
                ));
            }
            prev = end;
        }
        if prev != bytes.len() {
            return Err(GraphError::Inconsistent(
                "dictionary has trailing bytes".into(),
            ));
        }
        let mut dict = Dictionary {
            bytes,
            ends,
            index: HashTable::with_capacity(0),
        };
        dict.index.reserve(dict.ends.len(), |_| 0);
        for id in 0..dict.ends.len() as u32 {
            let name = dict.name(id);
            let hash = hash(name);
            if dict
                .index
                .find(hash, |&other| dict.name(other) == name)
                .is_some()
            {
                return Err(GraphError::DuplicateNode(name.to_owned()));
            }
            let (bytes, ends) = (&dict.bytes, &dict.ends);
            dict.index
                .insert_unique(hash, id, |&other| hash_of(bytes, ends, other));
        }
        Ok(dict)
    }
}

fn hash(name: &str) -> u64 {
    Hasher::default().hash_one(name)
}

fn hash_of(bytes: &str, ends: &[u32], id: u32) -> u64 {
    let i = id as usize;
    let start = if i == 0 { 0 } else { ends[i - 1] as usize };
    hash(&bytes[start..ends[i] as usize])
}

impl<'de> Deserialize<'de> for Dictionary {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        // Borrowing the string lets a slice-backed decoder check its length against the input
        // before anything is allocated (an owned `String` would allocate the claimed length first).
        #[derive(Deserialize)]
        struct Raw<'a> {
            #[serde(borrow)]
            bytes: std::borrow::Cow<'a, str>,
            ends: Vec<u32>,
        }
        let raw = Raw::deserialize(de)?;
        Dictionary::from_parts(raw.bytes.into_owned(), raw.ends).map_err(serde::de::Error::custom)
    }
}

impl std::fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dictionary")
            .field("len", &self.len())
            .finish()
    }
}

impl PartialEq for Dictionary {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes && self.ends == other.ends
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interns_and_looks_up_both_ways() {
        let mut d = Dictionary::new();
        let a = d.intern("chocolate cake").unwrap();
        let b = d.intern("кот").unwrap();
        assert_eq!(d.intern("chocolate cake").unwrap(), a);
        assert_eq!((a, b), (0, 1));
        assert_eq!(d.name(b), "кот");
        assert_eq!(d.get("кот"), Some(1));
        assert_eq!(d.get("dog"), None);
        assert_eq!(d.len(), 2);
    }

    #[test]
    fn rejects_inconsistent_parts() {
        assert!(Dictionary::from_parts("ab".into(), vec![3]).is_err());
        assert!(Dictionary::from_parts("ab".into(), vec![1]).is_err());
        assert!(Dictionary::from_parts("aa".into(), vec![1, 2]).is_err());
        // "é" is two bytes: an offset inside it is not a char boundary.
        assert!(Dictionary::from_parts("é".into(), vec![1, 2]).is_err());
        let d = Dictionary::from_parts("ab".into(), vec![1, 2]).unwrap();
        assert_eq!(d.get("b"), Some(1));
    }

    #[test]
    fn refuses_overlong_names() {
        let mut d = Dictionary::new();
        assert!(matches!(
            d.intern(&"x".repeat(MAX_NAME_LEN + 1)),
            Err(GraphError::NameTooLong { .. })
        ));
    }
}
