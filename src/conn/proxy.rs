//! A request a `--proxy` rule matched: forwarded to the rule's upstream.
//!
//! Input: the parsed request and the index of the rule among the site's rules. Output:
//! the response plan. Until the connection to the upstream is made here, a forwarded
//! request is answered 502 (the upstream is not reached), its body unread and the
//! connection closed.

use super::in_flight::After;
use super::record::Responder;
use crate::http::Request;

impl Responder<'_, '_> {
    /// Forwards `req` by the rule at `rule` of the site's rules.
    #[inline(never)]
    pub(super) fn proxy(&mut self, _req: &Request<'_, '_>, _rule: usize) {
        self.after = After::Close { linger: true };
        self.error_page(502);
    }
}
