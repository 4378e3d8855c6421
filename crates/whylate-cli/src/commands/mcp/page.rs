//! Results sized for a model's context: an explanation's misses come a page at a time
//! (the worst first), with a `page` object that says how many there are and where the
//! next page starts; one miss is picked out whole by its index or a time.

use serde_json::{json, Value};

/// Keeps `misses[offset..offset+limit]` of an explain report and adds `page`:
/// `{offset, limit, total, returned, next_offset}` (`next_offset` null at the end).
pub fn misses(report: &mut Value, offset: usize, limit: usize) {
    let all = match report.get_mut("misses").map(Value::take) {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    let total = all.len();
    let kept: Vec<Value> = all.into_iter().skip(offset).take(limit).collect();
    let end = offset.saturating_add(kept.len());
    let next = (end < total).then_some(end);
    report["page"] = json!({
        "offset": offset,
        "limit": limit,
        "total": total,
        "returned": kept.len(),
        "next_offset": next,
    });
    report["misses"] = Value::Array(kept);
}

/// The index of the miss `index` names, or the one whose cycle holds `at_ns` (else the
/// one starting nearest to it); None when there is no miss to pick.
pub fn pick(misses: &[Value], index: Option<u64>, at_ns: Option<u64>) -> Result<usize, String> {
    if misses.is_empty() {
        return Err("the explanation has no miss".into());
    }
    if let Some(i) = index {
        let i = usize::try_from(i).unwrap_or(usize::MAX);
        if i >= misses.len() {
            return Err(format!(
                "index {i}: there are {} misses (0 = the worst, {} = the last)",
                misses.len(),
                misses.len() - 1
            ));
        }
        return Ok(i);
    }
    let Some(t) = at_ns else {
        return Err("give `index` (0 = the worst miss) or `at_ns` (a time in the miss)".into());
    };
    let start = |m: &Value| m["start_ns"].as_u64().unwrap_or(0);
    let end = |m: &Value| start(m).saturating_add(m["duration_ns"].as_u64().unwrap_or(0));
    let holding = misses.iter().position(|m| start(m) <= t && t <= end(m));
    Ok(holding.unwrap_or_else(|| {
        (0..misses.len())
            .min_by_key(|&i| start(&misses[i]).abs_diff(t))
            .unwrap_or(0)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_and_picks() {
        let ms: Vec<Value> = (0..5)
            .map(|i| json!({"start_ns": 100 * i, "duration_ns": 10}))
            .collect();
        let mut r = json!({"misses": ms.clone(), "cycles": {}});
        misses(&mut r, 3, 3);
        assert_eq!(r["misses"].as_array().unwrap().len(), 2);
        assert_eq!(r["page"]["total"], 5);
        assert!(r["page"]["next_offset"].is_null());
        let mut r = json!({"misses": ms.clone()});
        misses(&mut r, 0, 2);
        assert_eq!(r["page"]["next_offset"], 2);
        assert_eq!(pick(&ms, Some(4), None), Ok(4));
        assert!(pick(&ms, Some(5), None)
            .unwrap_err()
            .contains("there are 5"));
        assert_eq!(pick(&ms, None, Some(205)), Ok(2));
        assert_eq!(pick(&ms, None, Some(290)), Ok(3));
        assert!(pick(&[], Some(0), None).is_err());
    }
}
