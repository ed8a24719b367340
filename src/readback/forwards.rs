//! `forwards`: every forward of a run in order, as its index lines say, summarised fields as text.

use super::error::{Answer, Result, Skip};
use super::lines::{walk, Line};
use crate::store::{Field, Store, StoreFs};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use std::rc::Rc;

/// A writer's or a field's name, one allocation shared by every row of an answer that carries
/// it (counted without atomics: an answer is built and read on one thread).
pub type Name = Rc<str>;

/// One forward as the index says it. Serialised flat: `{"forward":…, …, "loss.value":"0.41"}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ForwardRow {
    pub forward: u64,
    /// The writer whose index line this is.
    pub writer: Name,
    pub written_us: i64,
    pub took_us: u64,
    pub broke: bool,
    /// Why it broke, when the line says (boxed text: two words in the row, not three).
    pub error: Option<Box<str>>,
    /// Summarised fields, `<kind>.<field>` → value, in the order written (serialised as text,
    /// non-finite numbers as `NaN`, `Infinity`, `-Infinity`).
    pub fields: RowFields,
}

/// A row's summarised fields in the order written. The first is held in the row itself, so
/// the usual forward (one summarised field, the loss) allocates nothing for its fields, and
/// the rest behind one pointer, so the usual row stays small (a run's rows are most of the
/// memory `forwards` takes).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RowFields {
    first: Option<(Name, Field<'static>)>,
    // Boxed: one pointer in the row instead of a vector's three words.
    #[allow(clippy::box_collection)]
    rest: Option<Box<Vec<(Name, Field<'static>)>>>,
}

/// The pairs of a [`RowFields`], in order.
pub type RowFieldsIter<'a> = std::iter::Chain<
    std::option::Iter<'a, (Name, Field<'static>)>,
    std::slice::Iter<'a, (Name, Field<'static>)>,
>;

impl RowFields {
    /// Add a field after those already held.
    pub fn push(&mut self, name: Name, value: Field<'static>) {
        if self.first.is_none() {
            self.first = Some((name, value));
        } else {
            self.rest.get_or_insert_default().push((name, value));
        }
    }

    /// The fields, in the order written.
    pub fn iter(&self) -> RowFieldsIter<'_> {
        let rest = self.rest.as_deref().map_or(&[][..], Vec::as_slice);
        self.first.iter().chain(rest.iter())
    }

    /// Whether the row has no summarised field.
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// The value of field `name` (the first, if repeated).
    pub fn get(&self, name: &str) -> Option<&Field<'static>> {
        self.iter()
            .find(|(k, _)| k.as_ref() == name)
            .map(|(_, v)| v)
    }
}

impl<'a> IntoIterator for &'a RowFields {
    type Item = &'a (Name, Field<'static>);
    type IntoIter = RowFieldsIter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl Serialize for ForwardRow {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("forward", &self.forward)?;
        m.serialize_entry("writer", self.writer.as_ref())?;
        m.serialize_entry("written_us", &self.written_us)?;
        m.serialize_entry("took_us", &self.took_us)?;
        m.serialize_entry("broke", &self.broke)?;
        if let Some(e) = &self.error {
            m.serialize_entry("error", e)?;
        }
        for (k, v) in &self.fields {
            m.serialize_entry(k.as_ref(), &v.to_text())?;
        }
        m.end()
    }
}

/// Every forward of `run` in order of (forward, writer). One scan of the indexes and no
/// fetches; memory is the rows.
pub fn forwards<F: StoreFs>(store: &Store<F>, run: &str) -> Result<Answer<Vec<ForwardRow>>> {
    let mut answer = Answer::new(Vec::with_capacity(expected_rows(store, run)));
    let rows = &mut answer.rows;
    // Writer and field names repeat on every line: each is allocated once and shared.
    let mut names = Names::default();
    each_forward(store, run, &mut answer.skipped, &mut |l| {
        let mut fields = RowFields::default();
        l.fields
            .each(&mut |k, v| fields.push(names.get(k), v.into_owned()));
        rows.push(ForwardRow {
            forward: l.forward,
            writer: names.get(l.writer),
            written_us: l.written_us,
            took_us: l.took_us,
            broke: l.broke,
            error: l.error.map(Box::from),
            fields,
        })
    })?;
    Ok(answer)
}

/// Every forward of `run` as [`forwards`] gives it, each handed to `f` borrowed from its index
/// line rather than kept (for answers laid out otherwise: the wasm build's columns); what
/// could not be read goes to `skipped`.
pub(crate) fn each_forward<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    skipped: &mut Vec<Skip>,
    f: &mut dyn FnMut(&Line<'_>),
) -> Result<()> {
    walk(store, run, skipped, f)
}

/// Index lines the writer writes are rarely shorter than this many bytes (a forward with a
/// loss and a blob takes about 190).
const SHORT_LINE: u64 = 128;

/// About how many rows `run` has, from its indexes' lengths, so the rows are allocated once
/// and not copied as they grow (one row's memory per [`SHORT_LINE`] bytes of index, at most
/// a few million up front; the rows grow past that as needed).
fn expected_rows<F: StoreFs>(store: &Store<F>, run: &str) -> usize {
    let bytes: u64 = store
        .writers(run)
        .unwrap_or_default()
        .iter()
        .filter_map(|w| store.fs().len(&crate::store::scan::index_path(run, w)).ok())
        .sum();
    usize::try_from(bytes / SHORT_LINE).map_or(0, |n| n.min(4 << 20))
}

/// Names seen so far, each allocated once.
#[derive(Default)]
struct Names(Vec<Name>);

impl Names {
    fn get(&mut self, name: &str) -> Name {
        if let Some(n) = self.0.iter().find(|n| n.as_ref() == name) {
            return n.clone();
        }
        let n: Name = Rc::from(name);
        if self.0.len() < 256 {
            self.0.push(n.clone());
        }
        n
    }
}
