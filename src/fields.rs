//! Settings by name: each settings struct names its fields once ([`Fields`]), next to its
//! `Default` and `validate`, and any [`Visitor`] reads or writes them by those names (the
//! Python binding's dicts). A field added to a solver's settings is added in one line, in
//! that solver's folder; the binding holds no list of names.

use crate::error::MkError;

/// A walk over named settings: each method sees one field by name and may read or replace
/// it. `Error` takes the engine's errors, which the settings' parsers return.
pub trait Visitor {
    type Error: From<MkError>;
    fn float(&mut self, key: &'static str, v: &mut f64) -> Result<(), Self::Error>;
    fn count(&mut self, key: &'static str, v: &mut usize) -> Result<(), Self::Error>;
    /// A count where `None` means "automatic".
    fn optional_count(
        &mut self,
        key: &'static str,
        v: &mut Option<usize>,
    ) -> Result<(), Self::Error>;
    fn flag(&mut self, key: &'static str, v: &mut bool) -> Result<(), Self::Error>;
    fn text(&mut self, key: &'static str, v: &mut String) -> Result<(), Self::Error>;
    /// A list of non-negative integers, or `None`.
    fn ids(&mut self, key: &'static str, v: &mut Option<Vec<usize>>) -> Result<(), Self::Error>;
    /// A real number where `None` means "automatic".
    fn optional_float(&mut self, key: &'static str, v: &mut Option<f64>)
        -> Result<(), Self::Error>;
    /// A list of real numbers, or `None`.
    fn floats(&mut self, key: &'static str, v: &mut Option<Vec<f64>>) -> Result<(), Self::Error>;
}

/// Settings whose fields have names: [`Fields::fields`] shows every field to `v` once, in a
/// fixed order (the order of the binding's dicts), parsing the named values back into the
/// typed ones.
pub trait Fields {
    fn fields<V: Visitor>(&mut self, v: &mut V) -> Result<(), V::Error>;
}
