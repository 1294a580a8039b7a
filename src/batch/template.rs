//! `-o TEMPLATE` in a batch: `{id}` becomes the item's id and `{n}` its
//! number in the batch (from 1); the rest is kept as written. An id comes
//! from the batch file, not from the user's command line, so it is made
//! safe for one file name: every byte but ASCII letters, digits, `-`, `_`
//! and a `.` that does not start the id is written `%XX`. No id can then
//! name a directory (`/`), climb out of one (`..`), or hide a file (a
//! leading `.`), and two ids never share a file (`%` itself is escaped).

use std::fmt::Write;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template(String);

impl Template {
    /// A template naming each item's file: without `{id}` or `{n}` every
    /// item would overwrite the same one.
    pub fn parse(text: &str) -> Result<Template, String> {
        if text.contains("{id}") || text.contains("{n}") {
            Ok(Template(text.to_string()))
        } else {
            Err(format!(
                "-o {text:?} in a batch names one file for every item; put {{id}} or {{n}} in it"
            ))
        }
    }

    /// The file of item number `n` (from 1) with this id.
    pub fn path(&self, id: &str, n: u64) -> PathBuf {
        PathBuf::from(
            self.0
                .replace("{id}", &file_name(id))
                .replace("{n}", &n.to_string()),
        )
    }
}

/// `id` as one safe file name, distinct for distinct ids. The empty id
/// (which batch lines refuse) is `%`, which no other id writes.
pub fn file_name(id: &str) -> String {
    if id.is_empty() {
        return "%".into();
    }
    let mut name = String::with_capacity(id.len());
    for (i, b) in id.bytes().enumerate() {
        let safe = b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || (b == b'.' && i > 0);
        if safe {
            name.push(char::from(b));
        } else {
            write!(name, "%{b:02X}").expect("a String takes any write");
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::path::Component;

    #[test]
    fn replaces_id_and_n() {
        let t = Template::parse("out/{id}-{n}.json").unwrap();
        assert_eq!(t.path("user-7", 3), PathBuf::from("out/user-7-3.json"));
        assert_eq!(
            Template::parse("{n}.body").unwrap().path("x", 12),
            PathBuf::from("12.body")
        );
        assert!(
            Template::parse("out.json")
                .unwrap_err()
                .contains("{id} or {n}")
        );
    }

    #[test]
    fn ids_are_escaped() {
        let rows = [
            ("a.b", "a.b"),
            ("..", "%2E."),
            ("../etc/passwd", "%2E.%2Fetc%2Fpasswd"),
            (".hidden", "%2Ehidden"),
            ("a b%", "a%20b%25"),
            ("é", "%C3%A9"),
            ("C:\\x", "C%3A%5Cx"),
            ("", "%"),
        ];
        for (id, name) in rows {
            assert_eq!(file_name(id), name, "{id}");
        }
    }

    proptest! {
        #[test]
        fn no_id_leaves_the_template_directory(id in any::<String>(), other in any::<String>()) {
            let path = Template::parse("out/{id}").unwrap().path(&id, 1);
            let parts: Vec<_> = path.components().collect();
            prop_assert_eq!(parts.len(), 2);
            prop_assert!(matches!(parts[1], Component::Normal(_)));
            let name = file_name(&id);
            prop_assert!(!name.starts_with('.') && !name.contains('/'));
            if id != other {
                prop_assert_ne!(name, file_name(&other));
            }
        }
    }
}
