//! A series' labels in two buffers: all names and values back to back in one string, and
//! where each ends.
//!
//! A 200-namespace graph's answers hold about 11,000 series of a dozen labels each. As a
//! list of owned name and value strings that was about 90,000 allocations per graph, to
//! make, move across the ABI and free: most of the host's CPU for that graph. Here a
//! series' labels are two allocations whatever their count.

use std::{cmp::Ordering, fmt, hash::Hash};

use abi_stable::{
    StableAbi,
    std_types::{RString, RVec},
};

use crate::Label;

/// Where one label's name and value end in [`LabelSet`]'s text.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Ends {
    name: usize,
    value: usize,
}

/// A series' labels (`name="value"` pairs), in the order they were pushed.
///
/// Equal sets hold equal pairs in equal order; they order as their pairs do, name first.
#[repr(C)]
#[derive(StableAbi, Clone, Default, PartialEq, Eq, Hash)]
pub struct LabelSet {
    /// Every name and value, back to back.
    text: RString,
    /// One entry per label, in order.
    ends: RVec<Ends>,
}

impl LabelSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty set with room for `labels` labels of `text` bytes in all.
    pub fn with_capacity(labels: usize, text: usize) -> Self {
        LabelSet { text: RString::with_capacity(text), ends: RVec::with_capacity(labels) }
    }

    /// Appends a label; a repeated name is kept as a second label.
    pub fn push(&mut self, name: &str, value: &str) {
        self.text.push_str(name);
        let name = self.text.len();
        self.text.push_str(value);
        self.ends.push(Ends { name, value: self.text.len() });
    }

    /// The number of labels.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are no labels.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The `(name, value)` pairs, in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter { text: self.text.as_str(), start: 0, ends: self.ends.as_slice().iter() }
    }

    /// The value of the first label called `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// Keeps the labels for which `keep(name, value)` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &str) -> bool) {
        *self = self.iter().filter(|(n, v)| keep(n, v)).collect();
    }

    /// The labels as owned pairs.
    pub fn to_labels(&self) -> Vec<Label> {
        self.iter().map(|(n, v)| Label::new(n, v)).collect()
    }

    /// The sizes of its two heap buffers in bytes, at their capacity, for memory accounting.
    pub fn heap_bytes(&self) -> [usize; 2] {
        [self.text.capacity(), self.ends.capacity() * std::mem::size_of::<Ends>()]
    }

    /// Bytes reserved in its buffers beyond what its labels use.
    pub fn spare_bytes(&self) -> usize {
        let [text, ends] = self.heap_bytes();
        text - self.text.len() + ends - self.ends.len() * std::mem::size_of::<Ends>()
    }
}

/// The pairs of a [`LabelSet`].
#[derive(Clone)]
pub struct Iter<'a> {
    text: &'a str,
    start: usize,
    ends: std::slice::Iter<'a, Ends>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let e = self.ends.next()?;
        // The ends come from `push` on whole strings, so they fall on character boundaries;
        // `get` keeps a set built otherwise from panicking.
        let name = self.text.get(self.start..e.name).unwrap_or_default();
        let value = self.text.get(e.name..e.value).unwrap_or_default();
        self.start = e.value;
        Some((name, value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.ends.size_hint()
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a LabelSet {
    type Item = (&'a str, &'a str);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<N: AsRef<str>, V: AsRef<str>> FromIterator<(N, V)> for LabelSet {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(iter: I) -> Self {
        let mut set = LabelSet::new();
        set.extend(iter);
        set
    }
}

impl<N: AsRef<str>, V: AsRef<str>> Extend<(N, V)> for LabelSet {
    fn extend<I: IntoIterator<Item = (N, V)>>(&mut self, iter: I) {
        for (n, v) in iter {
            self.push(n.as_ref(), v.as_ref());
        }
    }
}

impl FromIterator<Label> for LabelSet {
    fn from_iter<I: IntoIterator<Item = Label>>(iter: I) -> Self {
        iter.into_iter().map(|l| (l.name, l.value)).collect()
    }
}

impl Ord for LabelSet {
    fn cmp(&self, other: &Self) -> Ordering {
        self.iter().cmp(other.iter())
    }
}

impl PartialOrd for LabelSet {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for LabelSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_come_back_in_order_with_empty_and_repeated_ones() {
        let set: LabelSet =
            [("b", "x"), ("", "empty name"), ("a", ""), ("b", "é")].into_iter().collect();
        let pairs: Vec<_> = set.iter().collect();
        assert_eq!(pairs, [("b", "x"), ("", "empty name"), ("a", ""), ("b", "é")]);
        assert_eq!(set.len(), 4);
        assert_eq!(set.iter().len(), 4);
        assert_eq!(set.get("b"), Some("x"));
        assert_eq!(set.get("a"), Some(""));
        assert_eq!(set.get("c"), None);
        assert!(LabelSet::new().is_empty());
        let mut roomy = LabelSet::with_capacity(8, 64);
        roomy.push("ab", "c");
        assert_eq!(roomy.spare_bytes(), 64 - 3 + 7 * 16);
        let mut exact = LabelSet::with_capacity(2, 4);
        exact.push("ab", "c");
        exact.push("d", "");
        assert_eq!(exact.spare_bytes(), 0);
        assert_eq!(exact.heap_bytes()[0], 4);
    }

    #[test]
    fn equality_and_order_follow_the_pairs_not_the_text() {
        let one: LabelSet = [("a", "bc")].into_iter().collect();
        let two: LabelSet = [("ab", "c")].into_iter().collect();
        assert_ne!(one, two);
        // As pairs: ("a", ..) sorts before ("ab", ..), as a list of `Label`s would.
        assert!(one < two);
        let as_labels = |s: &LabelSet| s.to_labels();
        assert_eq!(one.cmp(&two), as_labels(&one).cmp(&as_labels(&two)));
        let longer: LabelSet = [("a", "bc"), ("d", "e")].into_iter().collect();
        assert!(one < longer);
        assert_eq!(one.clone(), one);
    }

    #[test]
    fn retain_keeps_the_rest_in_order() {
        let mut set: LabelSet = [("a", "1"), ("b", "2"), ("c", "3")].into_iter().collect();
        set.retain(|n, _| n != "b");
        assert_eq!(set.iter().collect::<Vec<_>>(), [("a", "1"), ("c", "3")]);
        assert_eq!(set, [("a", "1"), ("c", "3")].into_iter().collect());
    }

    #[test]
    fn debug_reads_as_a_map() {
        let set: LabelSet = [("app", "reviews")].into_iter().collect();
        assert_eq!(format!("{set:?}"), r#"{"app": "reviews"}"#);
    }
}
