//! Expressions over id rows, with SPARQL's value rules for the values a graph without literals
//! gives (IRIs, blank nodes) and the query computes (simple literals, integers, booleans): `=`
//! compares values, `<` orders literals of one kind and is an error otherwise, an error is `None`
//! (it drops the row in FILTER, leaves the variable unbound in BIND). A function or operand
//! outside these makes `compile` decline, and spareval answers the query.

use std::borrow::Cow;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::sync::Arc;

use oxrdf::Variable;
use regex::{Regex, RegexBuilder};
use spargebra::algebra::{Expression, Function};

use super::plan::Planner;
use super::{Computed, Decoded, Terms, UNBOUND};
use crate::dataset::View;

/// Mirrors spareval's bound on a compiled pattern.
const REGEX_SIZE_LIMIT: usize = 1_000_000;

/// A compiled expression: variables are columns.
#[derive(Clone, Debug)]
pub(crate) enum Ex {
    Col(usize),
    Unbound,
    /// A term's id (an IRI, or an interned value).
    Const(u32),
    Or(Box<Ex>, Box<Ex>),
    And(Box<Ex>, Box<Ex>),
    Not(Box<Ex>),
    Equal(Box<Ex>, Box<Ex>),
    SameTerm(Box<Ex>, Box<Ex>),
    /// `a op b` holds when the order of `a` to `b` is one of these.
    Compare(Box<Ex>, Box<Ex>, [Option<Ordering>; 2]),
    In(Box<Ex>, Vec<Ex>),
    Arith(Box<Ex>, Box<Ex>, Arith),
    Negate(Box<Ex>),
    Plus(Box<Ex>),
    Bound(Option<usize>),
    If(Box<Ex>, Box<Ex>, Box<Ex>),
    Coalesce(Vec<Ex>),
    Call(Call, Vec<Ex>),
    Regex(Box<Ex>, Regex),
    /// EXISTS of one triple pattern: whether an edge matches it, given the row.
    Exists([Slot; 3]),
}

/// A place of an EXISTS triple pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    Const(u32),
    /// A variable of the row (free where the row leaves it unbound).
    Outer(usize),
    /// A variable of the pattern alone.
    Free(usize),
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Arith {
    Add,
    Subtract,
    Multiply,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Call {
    Str,
    StrLen,
    UCase,
    LCase,
    Contains,
    StrStarts,
    StrEnds,
    StrBefore,
    StrAfter,
    Concat,
    IsIri,
    IsBlank,
    IsLiteral,
    IsNumeric,
}

/// A value during evaluation.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Val<'g> {
    /// A node, a relation or an IRI the query named: compared as terms.
    Term(u32),
    Str(Cow<'g, str>),
    Int(i64),
    Bool(bool),
}

pub(crate) fn compile(e: &Expression, vars: &[Variable], p: &mut Planner<'_, '_>) -> Option<Ex> {
    use Expression as E;
    let go = |e: &Expression, p: &mut Planner<'_, '_>| compile(e, vars, p).map(Box::new);
    Some(match e {
        E::Variable(v) => match vars.iter().position(|x| x == v) {
            Some(c) => Ex::Col(c),
            None => Ex::Unbound,
        },
        E::NamedNode(n) => Ex::Const(p.constant(n.clone().into())?),
        E::Literal(l) => Ex::Const(p.constant(l.clone().into())?),
        E::Or(a, b) => Ex::Or(go(a, p)?, go(b, p)?),
        E::And(a, b) => Ex::And(go(a, p)?, go(b, p)?),
        E::Not(a) => Ex::Not(go(a, p)?),
        E::Equal(a, b) => Ex::Equal(go(a, p)?, go(b, p)?),
        E::SameTerm(a, b) => Ex::SameTerm(go(a, p)?, go(b, p)?),
        E::Greater(a, b) => Ex::Compare(go(a, p)?, go(b, p)?, [Some(Ordering::Greater), None]),
        E::GreaterOrEqual(a, b) => Ex::Compare(
            go(a, p)?,
            go(b, p)?,
            [Some(Ordering::Greater), Some(Ordering::Equal)],
        ),
        E::Less(a, b) => Ex::Compare(go(a, p)?, go(b, p)?, [Some(Ordering::Less), None]),
        E::LessOrEqual(a, b) => Ex::Compare(
            go(a, p)?,
            go(b, p)?,
            [Some(Ordering::Less), Some(Ordering::Equal)],
        ),
        E::In(a, list) => Ex::In(
            go(a, p)?,
            list.iter()
                .map(|x| compile(x, vars, p))
                .collect::<Option<_>>()?,
        ),
        E::Add(a, b) => Ex::Arith(go(a, p)?, go(b, p)?, Arith::Add),
        E::Subtract(a, b) => Ex::Arith(go(a, p)?, go(b, p)?, Arith::Subtract),
        E::Multiply(a, b) => Ex::Arith(go(a, p)?, go(b, p)?, Arith::Multiply),
        E::UnaryMinus(a) => Ex::Negate(go(a, p)?),
        E::UnaryPlus(a) => Ex::Plus(go(a, p)?),
        E::Bound(v) => Ex::Bound(vars.iter().position(|x| x == v)),
        E::If(a, b, c) => Ex::If(go(a, p)?, go(b, p)?, go(c, p)?),
        E::Coalesce(list) => Ex::Coalesce(
            list.iter()
                .map(|x| compile(x, vars, p))
                .collect::<Option<_>>()?,
        ),
        E::FunctionCall(f, args) => return call(f, args, vars, p),
        E::Exists(pattern) => return exists(pattern, vars, p),
        // Division gives decimals: spareval's.
        _ => return None,
    })
}

fn call(
    f: &Function,
    args: &[Expression],
    vars: &[Variable],
    p: &mut Planner<'_, '_>,
) -> Option<Ex> {
    use Function as F;
    if let F::Regex = f {
        return regex(args, vars, p);
    }
    let (c, arity) = match f {
        F::Str => (Call::Str, Some(1)),
        F::StrLen => (Call::StrLen, Some(1)),
        F::UCase => (Call::UCase, Some(1)),
        F::LCase => (Call::LCase, Some(1)),
        F::Contains => (Call::Contains, Some(2)),
        F::StrStarts => (Call::StrStarts, Some(2)),
        F::StrEnds => (Call::StrEnds, Some(2)),
        F::StrBefore => (Call::StrBefore, Some(2)),
        F::StrAfter => (Call::StrAfter, Some(2)),
        F::Concat => (Call::Concat, None),
        F::IsIri => (Call::IsIri, Some(1)),
        F::IsBlank => (Call::IsBlank, Some(1)),
        F::IsLiteral => (Call::IsLiteral, Some(1)),
        F::IsNumeric => (Call::IsNumeric, Some(1)),
        _ => return None,
    };
    if arity.is_some_and(|n| n != args.len()) {
        return None;
    }
    let args = args
        .iter()
        .map(|a| compile(a, vars, p))
        .collect::<Option<Vec<_>>>()?;
    Some(Ex::Call(c, args))
}

/// EXISTS { one triple pattern }; larger patterns are spareval's.
fn exists(
    pattern: &spargebra::algebra::GraphPattern,
    vars: &[Variable],
    p: &mut Planner<'_, '_>,
) -> Option<Ex> {
    use spargebra::term::{NamedNodePattern, TermPattern};
    let spargebra::algebra::GraphPattern::Bgp { patterns } = pattern else {
        return None;
    };
    let [t] = patterns.as_slice() else {
        return None;
    };
    let mut free: Vec<String> = Vec::new();
    let mut var = |name: &str, outer: Option<usize>| match outer {
        Some(c) => Slot::Outer(c),
        None => Slot::Free(free.iter().position(|f| f == name).unwrap_or_else(|| {
            free.push(name.to_owned());
            free.len() - 1
        })),
    };
    let outer = |v: &Variable| vars.iter().position(|x| x == v);
    let mut node = |x: &TermPattern, p: &mut Planner<'_, '_>| -> Option<Slot> {
        Some(match x {
            TermPattern::Variable(v) => var(v.as_str(), outer(v)),
            TermPattern::BlankNode(b) => var(&format!("_:{}", b.as_str()), None),
            TermPattern::NamedNode(n) => Slot::Const(p.pattern_constant(n.clone().into())),
            TermPattern::Literal(l) => Slot::Const(p.pattern_constant(l.clone().into())),
            #[allow(unreachable_patterns)]
            _ => return None,
        })
    };
    let s = node(&t.subject, p)?;
    let pred = match &t.predicate {
        NamedNodePattern::Variable(v) => node(&TermPattern::Variable(v.clone()), p)?,
        NamedNodePattern::NamedNode(n) => Slot::Const(p.pattern_constant(n.clone().into())),
    };
    let o = node(&t.object, p)?;
    // A variable both predicate and node: spareval's.
    if !matches!(pred, Slot::Const(_)) && (pred == s || pred == o) {
        return None;
    }
    Some(Ex::Exists([s, pred, o]))
}

/// REGEX with a constant pattern and flags, compiled once (a pattern that does not compile is
/// spareval's: it reports it per row).
fn regex(args: &[Expression], vars: &[Variable], p: &mut Planner<'_, '_>) -> Option<Ex> {
    let constant = |e: Option<&Expression>| match e {
        None => Some(String::new()),
        Some(Expression::Literal(l))
            if l.datatype() == oxrdf::vocab::xsd::STRING && l.language().is_none() =>
        {
            Some(l.value().to_owned())
        }
        _ => None,
    };
    if !(2..=3).contains(&args.len()) {
        return None;
    }
    let pattern = constant(args.get(1))?;
    let flags = constant(args.get(2))?;
    let pattern = if flags.contains('q') {
        regex::escape(&pattern)
    } else {
        pattern
    };
    let mut b = RegexBuilder::new(&pattern);
    b.size_limit(REGEX_SIZE_LIMIT);
    for f in flags.chars() {
        match f {
            's' => b.dot_matches_new_line(true),
            'm' => b.multi_line(true),
            'i' => b.case_insensitive(true),
            'x' => b.ignore_whitespace(true),
            'q' => &mut b,
            _ => return None,
        };
    }
    let re = b.build().ok()?;
    Some(Ex::Regex(Box::new(compile(&args[0], vars, p)?), re))
}

impl Ex {
    /// The columns the expression reads.
    pub fn columns(&self, out: &mut Vec<usize>) {
        let add = |c: usize, out: &mut Vec<usize>| {
            if !out.contains(&c) {
                out.push(c)
            }
        };
        match self {
            Ex::Col(c) | Ex::Bound(Some(c)) => add(*c, out),
            Ex::Unbound | Ex::Const(_) | Ex::Bound(None) => {}
            Ex::Not(a) | Ex::Negate(a) | Ex::Plus(a) | Ex::Regex(a, _) => a.columns(out),
            Ex::Or(a, b)
            | Ex::And(a, b)
            | Ex::Equal(a, b)
            | Ex::SameTerm(a, b)
            | Ex::Compare(a, b, _)
            | Ex::Arith(a, b, _) => {
                a.columns(out);
                b.columns(out);
            }
            Ex::In(a, l) => {
                a.columns(out);
                l.iter().for_each(|x| x.columns(out));
            }
            Ex::If(a, b, c) => {
                a.columns(out);
                b.columns(out);
                c.columns(out);
            }
            Ex::Coalesce(l) | Ex::Call(_, l) => l.iter().for_each(|x| x.columns(out)),
            Ex::Exists(slots) => {
                for s in slots {
                    if let Slot::Outer(c) = s {
                        add(*c, out);
                    }
                }
            }
        }
    }
}

/// What evaluation reads: the graph's texts and the interned values.
pub(crate) struct Env<'e, 'g> {
    pub view: View<'g>,
    pub terms: &'e RefCell<Terms>,
}

/// A term's kind, as the functions see it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Kind {
    Blank,
    Iri,
    Literal,
}

impl<'g> Env<'_, 'g> {
    /// The value of a cell (`None`: unbound).
    pub fn value(&self, id: u32) -> Option<Val<'g>> {
        if id == UNBOUND {
            return None;
        }
        Some(match self.terms.borrow().decode(id) {
            Decoded::Computed(Computed::Str(s)) => Val::Str(Cow::Owned(s.to_string())),
            Decoded::Computed(Computed::Int(i)) => Val::Int(*i),
            Decoded::Computed(Computed::Bool(b)) => Val::Bool(*b),
            _ => Val::Term(id),
        })
    }

    /// The id of a value (interned when the graph has no such term).
    pub fn id(&self, v: Val<'_>) -> u32 {
        match v {
            Val::Term(id) => id,
            Val::Str(s) => self
                .terms
                .borrow_mut()
                .intern(Computed::Str(Arc::from(s.as_ref()))),
            Val::Int(i) => self.terms.borrow_mut().intern(Computed::Int(i)),
            Val::Bool(b) => self.terms.borrow_mut().intern(Computed::Bool(b)),
        }
    }

    /// A term's kind and text (an IRI's string, a blank node's label).
    pub fn text(&self, id: u32) -> (Kind, Cow<'g, str>) {
        match self.terms.borrow().decode(id) {
            Decoded::Node(v) => {
                let (blank, text) = self.view.node_text(v);
                (
                    if blank { Kind::Blank } else { Kind::Iri },
                    Cow::Borrowed(text),
                )
            }
            Decoded::Relation(r) => (Kind::Iri, Cow::Borrowed(self.view.relation_text(r))),
            Decoded::Computed(Computed::Iri(s)) => (Kind::Iri, Cow::Owned(s.to_string())),
            // Not reached: `plan` declines expressions over other terms.
            Decoded::Computed(_) => (Kind::Literal, Cow::Borrowed("")),
        }
    }

    pub fn eval(&self, e: &Ex, row: &[u32]) -> Option<Val<'g>> {
        match e {
            Ex::Col(c) => self.value(row[*c]),
            Ex::Unbound => None,
            Ex::Const(id) => self.value(*id),
            Ex::Or(a, b) => match (self.ebv(a, row), self.ebv(b, row)) {
                (Some(true), _) | (_, Some(true)) => Some(Val::Bool(true)),
                (Some(false), Some(false)) => Some(Val::Bool(false)),
                _ => None,
            },
            Ex::And(a, b) => match (self.ebv(a, row), self.ebv(b, row)) {
                (Some(false), _) | (_, Some(false)) => Some(Val::Bool(false)),
                (Some(true), Some(true)) => Some(Val::Bool(true)),
                _ => None,
            },
            Ex::Not(a) => self.ebv(a, row).map(|b| Val::Bool(!b)),
            Ex::Equal(a, b) => equals(&self.eval(a, row)?, &self.eval(b, row)?).map(Val::Bool),
            Ex::SameTerm(a, b) => {
                let (a, b) = (self.eval(a, row)?, self.eval(b, row)?);
                Some(Val::Bool(a == b))
            }
            Ex::Compare(a, b, ok) => {
                let o = compare(&self.eval(a, row)?, &self.eval(b, row)?)?;
                Some(Val::Bool(ok.contains(&Some(o))))
            }
            Ex::In(a, list) => {
                let a = self.eval(a, row)?;
                let mut error = false;
                for x in list {
                    match self.eval(x, row).and_then(|x| equals(&a, &x)) {
                        Some(true) => return Some(Val::Bool(true)),
                        Some(false) => {}
                        None => error = true,
                    }
                }
                (!error).then_some(Val::Bool(false))
            }
            Ex::Arith(a, b, op) => match (self.eval(a, row)?, self.eval(b, row)?) {
                (Val::Int(a), Val::Int(b)) => match op {
                    Arith::Add => a.checked_add(b),
                    Arith::Subtract => a.checked_sub(b),
                    Arith::Multiply => a.checked_mul(b),
                }
                .map(Val::Int),
                _ => None,
            },
            Ex::Negate(a) => match self.eval(a, row)? {
                Val::Int(i) => i.checked_neg().map(Val::Int),
                _ => None,
            },
            Ex::Plus(a) => match self.eval(a, row)? {
                v @ Val::Int(_) => Some(v),
                _ => None,
            },
            Ex::Bound(c) => Some(Val::Bool(c.is_some_and(|c| row[c] != UNBOUND))),
            Ex::If(a, b, c) => {
                if self.ebv(a, row)? {
                    self.eval(b, row)
                } else {
                    self.eval(c, row)
                }
            }
            Ex::Coalesce(list) => list.iter().find_map(|x| self.eval(x, row)),
            Ex::Call(c, args) => self.call(*c, args, row),
            Ex::Regex(a, re) => match self.eval(a, row)? {
                Val::Str(s) => Some(Val::Bool(re.is_match(&s))),
                _ => None,
            },
            Ex::Exists(slots) => Some(Val::Bool(self.exists(slots, row))),
        }
    }

    fn exists(&self, slots: &[Slot; 3], row: &[u32]) -> bool {
        let value = |s: Slot| match s {
            Slot::Const(id) => Some(id),
            Slot::Outer(c) => Some(row[c]).filter(|&v| v != UNBOUND),
            Slot::Free(_) => None,
        };
        let terms = self.terms.borrow();
        let node = |id: Option<u32>| match id {
            None => Some(None),
            Some(id) if terms.is_node(id) => Some(Some(id)),
            Some(_) => None,
        };
        let (Some(s), Some(o)) = (node(value(slots[0])), node(value(slots[2]))) else {
            return false;
        };
        let relation = match value(slots[1]) {
            None => None,
            Some(id) => match terms.decode(id) {
                Decoded::Relation(r) => Some(r),
                Decoded::Node(v) => match self.view.relation_of(&crate::dataset::Id::Node(v)) {
                    Some(r) => Some(r),
                    None => return false,
                },
                Decoded::Computed(_) => return false,
            },
        };
        drop(terms);
        // Places that are the same free variable must agree (`?y :p ?y`).
        let same = |a: usize, b: usize| value(slots[a]).is_none() && slots[a] == slots[b];
        let mut found = false;
        self.view.triples(s, relation, o, &mut |a, _, b| {
            found = !same(0, 2) || a == b;
            !found
        });
        found
    }

    /// The effective boolean value.
    pub fn ebv(&self, e: &Ex, row: &[u32]) -> Option<bool> {
        match self.eval(e, row)? {
            Val::Bool(b) => Some(b),
            Val::Str(s) => Some(!s.is_empty()),
            Val::Int(i) => Some(i != 0),
            Val::Term(_) => None,
        }
    }

    fn string(&self, e: &Ex, row: &[u32]) -> Option<Cow<'g, str>> {
        match self.eval(e, row)? {
            Val::Str(s) => Some(s),
            _ => None,
        }
    }

    fn call(&self, c: Call, args: &[Ex], row: &[u32]) -> Option<Val<'g>> {
        let s = |i: usize| self.string(&args[i], row);
        let text = |v: String| Some(Val::Str(Cow::Owned(v)));
        match c {
            Call::Str => match self.eval(&args[0], row)? {
                Val::Term(id) => match self.text(id) {
                    (Kind::Iri, t) => Some(Val::Str(t)),
                    _ => None,
                },
                Val::Str(s) => Some(Val::Str(s)),
                Val::Int(i) => text(i.to_string()),
                Val::Bool(b) => text(b.to_string()),
            },
            Call::StrLen => Some(Val::Int(i64::try_from(s(0)?.chars().count()).ok()?)),
            Call::UCase => text(s(0)?.to_uppercase()),
            Call::LCase => text(s(0)?.to_lowercase()),
            Call::Contains => Some(Val::Bool(s(0)?.contains(s(1)?.as_ref()))),
            Call::StrStarts => Some(Val::Bool(s(0)?.starts_with(s(1)?.as_ref()))),
            Call::StrEnds => Some(Val::Bool(s(0)?.ends_with(s(1)?.as_ref()))),
            Call::StrBefore => {
                let (a, b) = (s(0)?, s(1)?);
                text(
                    a.find(b.as_ref())
                        .map_or(String::new(), |i| a[..i].to_owned()),
                )
            }
            Call::StrAfter => {
                let (a, b) = (s(0)?, s(1)?);
                text(
                    a.find(b.as_ref())
                        .map_or(String::new(), |i| a[i + b.len()..].to_owned()),
                )
            }
            Call::Concat => {
                let mut out = String::new();
                for i in 0..args.len() {
                    out.push_str(&s(i)?);
                }
                text(out)
            }
            Call::IsIri | Call::IsBlank | Call::IsLiteral => {
                let kind = match self.eval(&args[0], row)? {
                    Val::Term(id) => self.text(id).0,
                    _ => Kind::Literal,
                };
                let want = match c {
                    Call::IsIri => Kind::Iri,
                    Call::IsBlank => Kind::Blank,
                    _ => Kind::Literal,
                };
                Some(Val::Bool(kind == want))
            }
            Call::IsNumeric => Some(Val::Bool(matches!(self.eval(&args[0], row)?, Val::Int(_)))),
        }
    }

    /// SPARQL's order of terms (ORDER BY, MIN, MAX), as spareval has it: unbound, blank nodes,
    /// IRIs, literals; literals of one kind by value, others by lexical form then datatype.
    pub fn order(&self, a: Option<&Val<'g>>, b: Option<&Val<'g>>) -> Ordering {
        let (a, b) = match (a, b) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(a), Some(b)) => (a, b),
        };
        let term = |v: &Val<'g>| match v {
            Val::Term(id) => Some(self.text(*id)),
            _ => None,
        };
        match (term(a), term(b)) {
            (Some((ka, ta)), Some((kb, tb))) => ka.cmp(&kb).then_with(|| ta.cmp(&tb)),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => literal_order(a, b).unwrap_or_else(|| lexical(a).cmp(&lexical(b))),
        }
    }
}

/// A value ready for sorting: a term's text spelled out once, not at each comparison.
pub(crate) enum SortKey<'g> {
    Unbound,
    Term(Kind, Cow<'g, str>),
    Literal(Val<'g>),
}

impl<'g> Env<'_, 'g> {
    pub fn sort_key(&self, v: Option<Val<'g>>) -> SortKey<'g> {
        match v {
            None => SortKey::Unbound,
            Some(Val::Term(id)) => {
                let (kind, text) = self.text(id);
                SortKey::Term(kind, text)
            }
            Some(v) => SortKey::Literal(v),
        }
    }
}

/// [`Env::order`] on prepared keys.
pub(crate) fn key_order(a: &SortKey<'_>, b: &SortKey<'_>) -> Ordering {
    use SortKey as K;
    match (a, b) {
        (K::Unbound, K::Unbound) => Ordering::Equal,
        (K::Unbound, _) => Ordering::Less,
        (_, K::Unbound) => Ordering::Greater,
        (K::Term(ka, ta), K::Term(kb, tb)) => ka.cmp(kb).then_with(|| ta.cmp(tb)),
        (K::Term(..), K::Literal(_)) => Ordering::Less,
        (K::Literal(_), K::Term(..)) => Ordering::Greater,
        (K::Literal(a), K::Literal(b)) => {
            literal_order(a, b).unwrap_or_else(|| lexical(a).cmp(&lexical(b)))
        }
    }
}

/// `(lexical form, datatype)` of a literal value, for the order of unlike literals.
fn lexical<'a>(v: &'a Val<'_>) -> (Cow<'a, str>, &'static str) {
    match v {
        Val::Str(s) => (
            Cow::Borrowed(s.as_ref()),
            "http://www.w3.org/2001/XMLSchema#string",
        ),
        Val::Int(i) => (
            Cow::Owned(i.to_string()),
            "http://www.w3.org/2001/XMLSchema#integer",
        ),
        Val::Bool(b) => (
            Cow::Owned(b.to_string()),
            "http://www.w3.org/2001/XMLSchema#boolean",
        ),
        Val::Term(_) => (Cow::Borrowed(""), ""),
    }
}

fn literal_order(a: &Val<'_>, b: &Val<'_>) -> Option<Ordering> {
    match (a, b) {
        (Val::Str(a), Val::Str(b)) => Some(a.cmp(b)),
        (Val::Int(a), Val::Int(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

/// `=`: terms by identity, literals by value; unlike kinds are unequal (never an error for the
/// kinds held here).
pub(crate) fn equals(a: &Val<'_>, b: &Val<'_>) -> Option<bool> {
    Some(a == b)
}

/// `<` and friends: equal values are equal, literals of one kind are ordered, anything else is
/// an error.
fn compare(a: &Val<'_>, b: &Val<'_>) -> Option<Ordering> {
    if a == b {
        return Some(Ordering::Equal);
    }
    literal_order(a, b)
}
