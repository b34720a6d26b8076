//! `--user NAME|UID[:GID]` to the ids to become, read from `/etc/passwd` and `/etc/group`
//! directly: a static binary has no NSS, so no `getpwnam`.
//!
//! Input: the unresolved [`UserSpec`] and the two files' text (the parsers take text, so
//! tests use fixtures). Output: an [`Identity`] (uid, primary gid, supplementary groups).
//! It does not change credentials: the master calls `sys::become_user` after binding.
//!
//! File formats: passwd(5) `name:password:uid:gid:gecos:home:shell` and group(5)
//! `name:password:gid:member,member`. Blank lines, `#` comments and NIS `+`/`-` lines are
//! skipped; a malformed line is skipped too, as libc's files backend does.

use crate::config::UserSpec;
use core::fmt;

/// The credentials a `--user` resolves to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Identity {
    /// User id.
    pub(crate) uid: u32,
    /// Primary group id.
    pub(crate) gid: u32,
    /// Supplementary groups: the primary gid first, then every group listing the user.
    pub(crate) groups: Vec<u32>,
}

/// Why a `--user` could not be resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UserError(pub String);

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One passwd(5) entry, the fields we use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PasswdEntry<'a> {
    name: &'a str,
    uid: u32,
    gid: u32,
}

/// One group(5) entry, the fields we use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct GroupEntry<'a> {
    name: &'a str,
    gid: u32,
    members: &'a str,
}

fn records(text: &str) -> impl Iterator<Item = Vec<&str>> {
    text.lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(['+', '-']))
        .map(|l| l.split(':').collect())
}

fn passwd_entries(text: &str) -> impl Iterator<Item = PasswdEntry<'_>> {
    records(text).filter_map(|f| match f[..] {
        [name, _, uid, gid, ..] if f.len() == 7 => Some(PasswdEntry {
            name,
            uid: uid.parse().ok()?,
            gid: gid.parse().ok()?,
        }),
        _ => None,
    })
}

fn group_entries(text: &str) -> impl Iterator<Item = GroupEntry<'_>> {
    records(text).filter_map(|f| match f[..] {
        [name, _, gid, members] => Some(GroupEntry {
            name,
            gid: gid.parse().ok()?,
            members,
        }),
        _ => None,
    })
}

/// A group given by name or number; a number need not exist in `/etc/group`.
fn resolve_group(group: &str, group_text: &str) -> Result<u32, UserError> {
    if let Ok(gid) = group.parse::<u32>() {
        return Ok(gid);
    }
    group_entries(group_text)
        .find(|g| g.name == group)
        .map(|g| g.gid)
        .ok_or_else(|| UserError(format!("group {group:?} is not in /etc/group")))
}

/// Reads `/etc/passwd` and `/etc/group` and resolves `spec` (a missing `/etc/group` is
/// read as empty).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn lookup(spec: &UserSpec) -> Result<Identity, UserError> {
    let passwd = std::fs::read_to_string("/etc/passwd")
        .map_err(|e| UserError(format!("reading /etc/passwd: {e}")))?;
    let group = std::fs::read_to_string("/etc/group").unwrap_or_default();
    resolve(spec, &passwd, &group)
}

/// Resolves `spec` against the text of `/etc/passwd` and `/etc/group`.
pub(crate) fn resolve(
    spec: &UserSpec,
    passwd_text: &str,
    group_text: &str,
) -> Result<Identity, UserError> {
    let (uid, entry, group) = match spec {
        UserSpec::Name(name, group) => {
            let entry = passwd_entries(passwd_text)
                .find(|p| p.name == name)
                .ok_or_else(|| UserError(format!("user {name:?} is not in /etc/passwd")))?;
            (entry.uid, Some(entry), group)
        }
        UserSpec::Id(uid, group) => {
            let entry = passwd_entries(passwd_text).find(|p| p.uid == *uid);
            (*uid, entry, group)
        }
    };
    let gid = match (group, entry) {
        (Some(g), _) => resolve_group(g, group_text)?,
        (None, Some(e)) => e.gid,
        (None, None) => {
            return Err(UserError(format!(
                "uid {uid} has no /etc/passwd entry to take a group from; give --user {uid}:GID"
            )))
        }
    };
    let mut groups = vec![gid];
    if let Some(e) = entry {
        let listed = group_entries(group_text)
            .filter(|g| g.members.split(',').any(|m| m == e.name))
            .map(|g| g.gid);
        for g in listed {
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
    }
    Ok(Identity { uid, gid, groups })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &str = "\
root:x:0:0:root:/root:/bin/bash
# a comment
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin
broken:x:notanumber:1:::
short:x:5
+nisuser::::::
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
";
    const GROUP: &str = "\
root:x:0:
daemon:x:1:
www-data:x:33:
web:x:1000:www-data,daemon
ssl-cert:x:110:www-data
nogroup:x:65534:
";

    fn name(n: &str, g: Option<&str>) -> UserSpec {
        UserSpec::Name(n.into(), g.map(String::from))
    }

    #[test]
    fn name_takes_uid_gid_and_memberships() {
        let id = resolve(&name("www-data", None), PASSWD, GROUP).expect("resolves");
        assert_eq!(
            id,
            Identity {
                uid: 33,
                gid: 33,
                groups: vec![33, 1000, 110]
            }
        );
    }

    #[test]
    fn group_override_by_name_or_number() {
        let id = resolve(&name("nobody", Some("web")), PASSWD, GROUP).expect("resolves");
        assert_eq!((id.uid, id.gid, id.groups), (65534, 1000, vec![1000]));
        let id = resolve(&name("daemon", Some("4242")), PASSWD, GROUP).expect("resolves");
        assert_eq!((id.gid, id.groups), (4242, vec![4242, 1000]));
    }

    #[test]
    fn numeric_uid_with_and_without_entry() {
        let id = resolve(&UserSpec::Id(33, None), PASSWD, GROUP).expect("resolves");
        assert_eq!((id.uid, id.gid), (33, 33));
        let id = resolve(&UserSpec::Id(7000, Some("7001".into())), PASSWD, GROUP).expect("ok");
        assert_eq!((id.uid, id.gid, id.groups), (7000, 7001, vec![7001]));
        let e = resolve(&UserSpec::Id(7000, None), PASSWD, GROUP).expect_err("no group");
        assert!(e.0.contains("7000:GID"), "{e}");
    }

    #[test]
    fn unknown_names_and_malformed_lines() {
        assert!(resolve(&name("nosuch", None), PASSWD, GROUP).is_err());
        assert!(resolve(&name("broken", None), PASSWD, GROUP).is_err());
        assert!(resolve(&name("short", None), PASSWD, GROUP).is_err());
        assert!(resolve(&name("+nisuser", None), PASSWD, GROUP).is_err());
        let e = resolve(&name("root", Some("nosuch")), PASSWD, GROUP).expect_err("group");
        assert!(e.0.contains("nosuch"), "{e}");
        assert!(resolve(&name("root", None), "", "").is_err());
    }
}
