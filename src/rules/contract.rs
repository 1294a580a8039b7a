//! Response contracts (`--require POINTER`): a 2xx answer counts as a
//! success only if its body is JSON with a value at every RFC 6901 pointer.
//! `null` and an empty array count as present: an empty result the contract
//! allows is a success, not a reason to retry.

/// `Err` names what is missing, for the outcome's reason.
pub fn check(body: &[u8], pointers: &[String]) -> Result<(), String> {
    if pointers.is_empty() {
        return Ok(());
    }
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
        format!(
            "the body is not JSON ({e}), so --require {} cannot hold",
            pointers[0]
        )
    })?;
    match pointers.iter().find(|p| value.pointer(p).is_none()) {
        Some(missing) => Err(format!("the body has no value at --require {missing}")),
        None => Ok(()),
    }
}

/// `--id-pointer`: the value at `pointer` in a JSON body, as text (a
/// string as it is, a number as written); `None` for anything else.
pub fn pointed_id(body: &[u8], pointer: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    match value.pointer(pointer)? {
        serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_at_pointers() {
        let body = br#"{"id":"ord_42","n":17,"empty":"","list":[1],"none":null}"#;
        assert_eq!(pointed_id(body, "/id").as_deref(), Some("ord_42"));
        assert_eq!(pointed_id(body, "/n").as_deref(), Some("17"));
        for missing in ["/empty", "/list", "/none", "/absent"] {
            assert_eq!(pointed_id(body, missing), None, "{missing}");
        }
        assert_eq!(pointed_id(b"not json", "/id"), None);
    }

    fn ptrs(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn pointers() {
        let body = br#"{"data":{"items":[],"next":null,"a/b":1,"m~n":2},"list":[{"id":7}]}"#;
        let rows: [(&[&str], bool); 10] = [
            (&[], true),
            (&[""], true),
            (&["/data/items"], true),
            (&["/data/next"], true),
            (&["/data/a~1b"], true),
            (&["/data/m~0n"], true),
            (&["/list/0/id"], true),
            (&["/data/items", "/list/1"], false),
            (&["/data/total"], false),
            (&["/list/0/id/x"], false),
        ];
        for (p, ok) in rows {
            assert_eq!(check(body, &ptrs(p)).is_ok(), ok, "{p:?}");
        }
        let err = check(body, &ptrs(&["/data/items", "/data/total"])).unwrap_err();
        assert_eq!(err, "the body has no value at --require /data/total");
    }

    #[test]
    fn bodies_that_are_not_json() {
        for body in [&b""[..], b"<html>", b"{\"a\":", b"\xff"] {
            let err = check(body, &ptrs(&["/a"])).unwrap_err();
            assert!(err.starts_with("the body is not JSON"), "{err}");
        }
        // Without a contract, anything goes.
        assert!(check(b"<html>", &[]).is_ok());
    }
}
