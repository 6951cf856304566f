//! The rule language of `tracelens check` and `--fail-on`: comparisons of documented metrics
//! with numbers (units allowed), combined with `and`, `or`, `not` and parentheses.
//!
//! ```text
//! rule   := or
//! or     := and ("or" and)*
//! and    := unary ("and" unary)*
//! unary  := "not" unary | "(" rule ")" | metric op number unit?
//! op     := ">=" | "<=" | "==" | "!=" | ">" | "<"
//! unit   := "ms" | "us" | "µs" | "s" | "%"
//! ```
//!
//! A rule describes a problem: `check` fails (exit 1) when a rule is true. Errors give the
//! column and what was expected, and a misspelt metric gets the nearest valid name.

use crate::metrics::{Metrics, Unit};
use nom::branch::alt;
use nom::bytes::complete::{tag, take_while, take_while1};
use nom::character::complete::{char, multispace0, multispace1};
use nom::combinator::{opt, recognize};
use nom::sequence::{pair, tuple};
use nom::IResult;

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Eq => (a - b).abs() < 1e-9,
            Op::Ne => (a - b).abs() >= 1e-9,
        }
    }
}

/// A literal's unit as written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LiteralUnit {
    /// A time, with its factor to milliseconds.
    Time(f64),
    /// `%`.
    Percent,
}

/// A parsed rule.
#[derive(Clone, Debug, PartialEq)]
pub enum Rule {
    /// Either holds.
    Or(Box<Rule>, Box<Rule>),
    /// Both hold.
    And(Box<Rule>, Box<Rule>),
    /// The negation.
    Not(Box<Rule>),
    /// `metric op value unit?`
    Compare {
        /// Metric name.
        metric: String,
        /// 1-based column of the metric in the rule text.
        column: usize,
        /// Operator.
        op: Op,
        /// The number as written.
        value: f64,
        /// Its unit, if written.
        unit: Option<LiteralUnit>,
    },
}

/// A rule that cannot be parsed or evaluated: the column and what went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError {
    /// 1-based column in the rule text.
    pub column: usize,
    /// What was expected or what is wrong.
    pub message: String,
}

impl std::fmt::Display for RuleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

/// The parser's error: where it stopped and what it wanted there.
#[derive(Debug)]
struct Expected<'a> {
    at: &'a str,
    what: &'static str,
}

impl<'a> nom::error::ParseError<&'a str> for Expected<'a> {
    fn from_error_kind(at: &'a str, _: nom::error::ErrorKind) -> Self {
        Expected { at, what: "" }
    }
    fn append(_: &'a str, _: nom::error::ErrorKind, other: Self) -> Self {
        other
    }
    fn or(self, other: Self) -> Self {
        // Keep the error that got furthest.
        if other.at.len() < self.at.len() {
            other
        } else {
            self
        }
    }
}

type Res<'a, T> = IResult<&'a str, T, Expected<'a>>;

/// Labels a parser's failure with what was expected.
fn expect<'a, T>(
    what: &'static str,
    mut p: impl FnMut(&'a str) -> Res<'a, T>,
) -> impl FnMut(&'a str) -> Res<'a, T> {
    move |i: &'a str| {
        p(i).map_err(|e| {
            e.map(|mut err| {
                if err.what.is_empty() || err.at.len() >= i.len() {
                    err.what = what;
                    err.at = i;
                }
                err
            })
        })
    }
}

fn ws<'a, T>(p: impl FnMut(&'a str) -> Res<'a, T>) -> impl FnMut(&'a str) -> Res<'a, T> {
    nom::sequence::preceded(multispace0, p)
}

fn keyword<'a>(word: &'static str) -> impl FnMut(&'a str) -> Res<'a, &'a str> {
    move |i: &'a str| {
        let (rest, w) = ws(take_while1(|c: char| c.is_ascii_alphanumeric() || c == '_'))(i)?;
        if w == word {
            Ok((rest, w))
        } else {
            Err(nom::Err::Error(Expected { at: i, what: word }))
        }
    }
}

fn metric_name(i: &str) -> Res<'_, &str> {
    let word = |i| {
        recognize(pair(
            take_while1(|c: char| c.is_ascii_lowercase() || c == '_'),
            take_while(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
        ))(i)
    };
    // A segment the trace names (an operator, a region) is quoted: `op."aten::mm".gpu_ms`.
    let quoted = |i| {
        recognize(nom::sequence::delimited(
            char('"'),
            take_while1(|c: char| c != '"' && !c.is_control()),
            char('"'),
        ))(i)
    };
    expect(
        "a metric name (like gpu.idle_percent)",
        recognize(pair(
            word,
            nom::multi::many0(pair(char('.'), alt((word, quoted)))),
        )),
    )(i)
}

fn op(i: &str) -> Res<'_, Op> {
    expect(
        "a comparison (>, >=, <, <=, ==, !=)",
        alt((
            nom::combinator::value(Op::Ge, tag(">=")),
            nom::combinator::value(Op::Le, tag("<=")),
            nom::combinator::value(Op::Eq, tag("==")),
            nom::combinator::value(Op::Ne, tag("!=")),
            nom::combinator::value(Op::Gt, tag(">")),
            nom::combinator::value(Op::Lt, tag("<")),
        )),
    )(i)
}

fn number(i: &str) -> Res<'_, f64> {
    let (rest, text) = expect(
        "a number",
        recognize(tuple((
            opt(char('-')),
            take_while1(|c: char| c.is_ascii_digit()),
            opt(pair(char('.'), take_while1(|c: char| c.is_ascii_digit()))),
        ))),
    )(i)?;
    Ok((rest, text.parse().unwrap_or(0.0)))
}

fn unit(i: &str) -> Res<'_, LiteralUnit> {
    alt((
        nom::combinator::value(LiteralUnit::Time(1.0), tag("ms")),
        nom::combinator::value(LiteralUnit::Time(0.001), tag("us")),
        nom::combinator::value(LiteralUnit::Time(0.001), tag("µs")),
        nom::combinator::value(LiteralUnit::Time(1000.0), tag("s")),
        nom::combinator::value(LiteralUnit::Percent, tag("%")),
    ))(i)
}

fn comparison<'a>(full: &'a str) -> impl FnMut(&'a str) -> Res<'a, Rule> {
    move |i: &'a str| {
        let (i, _) = multispace0(i)?;
        let column = full.len() - i.len() + 1;
        let (i, metric) = metric_name(i)?;
        let (i, op) = ws(op)(i)?;
        let (i, value) = ws(number)(i)?;
        let (i, unit) = opt(ws(unit))(i)?;
        Ok((
            i,
            Rule::Compare {
                metric: metric.to_string(),
                column,
                op,
                value,
                unit,
            },
        ))
    }
}

fn unary<'a>(full: &'a str) -> impl FnMut(&'a str) -> Res<'a, Rule> {
    move |i: &'a str| {
        if let Ok((rest, _)) = keyword("not")(i) {
            let (rest, inner) = unary(full)(rest)?;
            return Ok((rest, Rule::Not(Box::new(inner))));
        }
        if let Ok((rest, _)) = ws(char::<&str, Expected>('('))(i) {
            let (rest, inner) = or_rule(full)(rest)?;
            let (rest, _) = expect("')'", ws(char(')')))(rest)?;
            return Ok((rest, inner));
        }
        comparison(full)(i)
    }
}

fn and_rule<'a>(full: &'a str) -> impl FnMut(&'a str) -> Res<'a, Rule> {
    move |i: &'a str| {
        let (mut i, mut left) = unary(full)(i)?;
        while let Ok((rest, _)) = pair(multispace1, keyword("and"))(i) {
            let (rest, right) = unary(full)(rest)?;
            left = Rule::And(Box::new(left), Box::new(right));
            i = rest;
        }
        Ok((i, left))
    }
}

fn or_rule<'a>(full: &'a str) -> impl FnMut(&'a str) -> Res<'a, Rule> {
    move |i: &'a str| {
        let (mut i, mut left) = and_rule(full)(i)?;
        while let Ok((rest, _)) = pair(multispace1, keyword("or"))(i) {
            let (rest, right) = and_rule(full)(rest)?;
            left = Rule::Or(Box::new(left), Box::new(right));
            i = rest;
        }
        Ok((i, left))
    }
}

/// The longest rule text accepted, in bytes.
pub const MAX_RULE_BYTES: usize = 4096;
/// The deepest nesting accepted: parentheses and `not`s counted together.
pub const MAX_RULE_NESTING: usize = 32;

/// Refuses a rule the parser and evaluator would recurse too deep on: too long, or nested
/// deeper than [`MAX_RULE_NESTING`].
fn check_bounds(text: &str) -> Result<(), RuleError> {
    if text.len() > MAX_RULE_BYTES {
        return Err(RuleError {
            column: MAX_RULE_BYTES + 1,
            message: format!("the rule is longer than {MAX_RULE_BYTES} bytes"),
        });
    }
    let mut depth = 0_usize;
    let mut nots = 0_usize;
    let mut word_start = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            word_start.get_or_insert(i);
            continue;
        }
        if let Some(start) = word_start.take() {
            if text[start..i].eq_ignore_ascii_case("not") {
                nots += 1;
            }
        }
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth + nots > MAX_RULE_NESTING {
            return Err(RuleError {
                column: i + 1,
                message: format!(
                    "the rule nests deeper than {MAX_RULE_NESTING} levels of parentheses and 'not'"
                ),
            });
        }
    }
    Ok(())
}

/// Parses a rule and checks its metric names and units against the documented metrics.
pub fn parse_rule(text: &str) -> Result<Rule, RuleError> {
    check_bounds(text)?;
    let column = |rest: &str| text.len() - rest.len() + 1;
    let rule = match or_rule(text)(text) {
        Ok((rest, rule)) => {
            let rest_trim = rest.trim_start();
            if !rest_trim.is_empty() {
                return Err(RuleError {
                    column: column(rest_trim),
                    message: format!(
                        "expected 'and', 'or' or the end of the rule, found '{}'",
                        rest_trim.chars().take(12).collect::<String>()
                    ),
                });
            }
            rule
        }
        Err(nom::Err::Error(e) | nom::Err::Failure(e)) => {
            let found = e.at.trim_start();
            let found = if found.is_empty() {
                "the end of the rule".to_string()
            } else {
                format!("'{}'", found.chars().take(12).collect::<String>())
            };
            let what = if e.what.is_empty() {
                "a comparison"
            } else {
                e.what
            };
            return Err(RuleError {
                column: column(e.at.trim_start()),
                message: format!("expected {what}, found {found}"),
            });
        }
        Err(nom::Err::Incomplete(_)) => {
            return Err(RuleError {
                column: text.len() + 1,
                message: "the rule ends too early".into(),
            })
        }
    };
    rule.validate(&Metrics::all_names())?;
    Ok(rule)
}

/// Edit distance, for "did you mean".
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

impl Rule {
    fn validate(&self, names: &[String]) -> Result<(), RuleError> {
        match self {
            Rule::Or(a, b) | Rule::And(a, b) => {
                a.validate(names)?;
                b.validate(names)
            }
            Rule::Not(a) => a.validate(names),
            Rule::Compare {
                metric,
                column,
                unit,
                ..
            } => {
                if !crate::metrics::is_metric_name(metric, names) {
                    let nearest = names.iter().min_by_key(|n| distance(n, metric));
                    let hint = nearest
                        .map(|n| format!("; did you mean '{n}'?"))
                        .unwrap_or_default();
                    return Err(RuleError {
                        column: *column,
                        message: format!(
                            "unknown metric '{metric}'{hint} (docs/rules.md lists them)"
                        ),
                    });
                }
                let metric_unit = Metrics::unit_of(metric);
                let fits = matches!(
                    (unit, metric_unit),
                    (None, _)
                        | (Some(LiteralUnit::Time(_)), Unit::Ms)
                        | (Some(LiteralUnit::Percent), Unit::Percent)
                );
                if !fits {
                    return Err(RuleError {
                        column: *column,
                        message: format!(
                            "'{metric}' is {}, so the number cannot carry that unit",
                            match metric_unit {
                                Unit::Ms => "a time (ms)",
                                Unit::Percent => "a percentage",
                                Unit::Count => "a count",
                            }
                        ),
                    });
                }
                Ok(())
            }
        }
    }

    /// Whether the rule is true for `metrics` (a problem found).
    #[must_use]
    pub fn fires(&self, metrics: &Metrics) -> bool {
        match self {
            Rule::Or(a, b) => a.fires(metrics) || b.fires(metrics),
            Rule::And(a, b) => a.fires(metrics) && b.fires(metrics),
            Rule::Not(a) => !a.fires(metrics),
            Rule::Compare {
                metric,
                op,
                value,
                unit,
                ..
            } => {
                let Some(m) = metrics.get(metric) else {
                    return false;
                };
                let rhs = match unit {
                    Some(LiteralUnit::Time(factor)) => value * factor,
                    _ => *value,
                };
                op.holds(m.value, rhs)
            }
        }
    }

    /// The metrics the rule reads, in order, each once.
    #[must_use]
    pub fn metric_names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_names(&mut out);
        out
    }

    fn collect_names<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Rule::Or(a, b) | Rule::And(a, b) => {
                a.collect_names(out);
                b.collect_names(out);
            }
            Rule::Not(a) => a.collect_names(out),
            Rule::Compare { metric, .. } => {
                if !out.contains(&metric.as_str()) {
                    out.push(metric);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse_rule(text).unwrap_err().to_string()
    }

    #[test]
    fn valid_rules_parse() {
        let r = parse_rule("gpu.idle_percent > 25").unwrap();
        assert!(
            matches!(r, Rule::Compare { op: Op::Gt, value, .. } if (value - 25.0).abs() < f64::EPSILON)
        );
        let r = parse_rule("not (step.time_ms > 120ms or idle.data_loading.percent >= 10 %) and findings.count != 0").unwrap();
        assert!(matches!(r, Rule::And(..)));
        assert_eq!(
            r.metric_names(),
            [
                "step.time_ms",
                "idle.data_loading.percent",
                "findings.count"
            ]
        );
        assert!(parse_rule("gpu.idle_ms > 500us").is_ok());
        assert!(parse_rule("finding.implicit_sync.count_per_step >= 1").is_ok());
        assert!(parse_rule("diff.step_time_percent > 5").is_ok());
    }

    #[test]
    fn deep_or_long_rules_are_refused_before_parsing() {
        let parens = format!(
            "{}gpu.idle_percent > 5{}",
            "(".repeat(1000),
            ")".repeat(1000)
        );
        assert!(
            err(&parens).contains("nests deeper than 32"),
            "{}",
            err(&parens)
        );
        let parens = format!(
            "{}gpu.idle_percent > 5{}",
            "(".repeat(7000),
            ")".repeat(7000)
        );
        assert!(
            err(&parens).contains("longer than 4096"),
            "{}",
            err(&parens)
        );
        let nots = format!("{}gpu.idle_percent > 5", "not ".repeat(20_000));
        assert!(err(&nots).contains("longer than 4096"), "{}", err(&nots));
        let nots = format!("{}gpu.idle_percent > 5", "not ".repeat(40));
        assert!(err(&nots).contains("nests deeper"), "{}", err(&nots));
        // Within the bounds, nesting still parses.
        let ok = format!("{}gpu.idle_percent > 5{}", "(".repeat(16), ")".repeat(16));
        assert!(parse_rule(&ok).is_ok());
        assert!(parse_rule("not not gpu.idle_percent > 5").is_ok());
    }

    #[test]
    fn malformed_rules_say_where_and_what() {
        assert_eq!(
            err("gpu.idle_percent >"),
            "column 19: expected a number, found the end of the rule"
        );
        assert_eq!(
            err("gpu.idle_percent = 5"),
            "column 18: expected a comparison (>, >=, <, <=, ==, !=), found '= 5'"
        );
        assert_eq!(
            err("gpu.idle_precent > 5"),
            "column 1: unknown metric 'gpu.idle_precent'; did you mean 'gpu.idle_percent'? (docs/rules.md lists them)"
        );
        assert_eq!(
            err("(gpu.idle_percent > 5"),
            "column 22: expected ')', found the end of the rule"
        );
        assert_eq!(
            err("gpu.idle_percent > 5 xor step.count > 1"),
            "column 22: expected 'and', 'or' or the end of the rule, found 'xor step.cou'"
        );
        assert_eq!(
            err("step.time_ms > 5 %"),
            "column 1: 'step.time_ms' is a time (ms), so the number cannot carry that unit"
        );
        assert_eq!(
            err("> 5"),
            "column 1: expected a metric name (like gpu.idle_percent), found '> 5'"
        );
    }
}
