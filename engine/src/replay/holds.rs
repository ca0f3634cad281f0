//! Which closed episodes are held at their floor, request by request.
//!
//! A hold is a flag that stays set from one request to the next until it is cleared, so a
//! long hold costs nothing per request: a policy that decides its holds afresh at each request
//! sets them for that request only ([`Holds::hold_now`]); one that keeps its held set in step
//! with its own state sets and clears them as they change ([`Holds::set`]). A frame lists the
//! holds that begin and end at its request and counts those in force.

/// The held flags of one pass.
#[derive(Debug)]
pub(crate) struct Holds {
    on: Vec<bool>,
    count: u64,
    /// Held for the current request only (released when the next begins).
    transient: Vec<usize>,
    /// Episodes whose flag changed at the current request, with the flag it had when the
    /// request began (`before`), stamped with the request + 1 (`toggled_at`, 0: never).
    toggled: Vec<usize>,
    toggled_at: Vec<usize>,
    before: Vec<bool>,
    now: usize,
    /// Bumped whenever every hold is released at once, so a policy keeping its own view of
    /// the held set can tell that view is stale.
    epoch: u64,
}

impl Holds {
    pub fn new(n: usize) -> Holds {
        Holds {
            on: vec![false; n],
            count: 0,
            transient: Vec::new(),
            toggled: Vec::new(),
            toggled_at: vec![0; n],
            before: vec![false; n],
            now: 0,
            epoch: 0,
        }
    }

    /// Request `now` begins: the holds made for the previous request alone end.
    pub fn begin(&mut self, now: usize) {
        self.now = now;
        self.toggled.clear();
        for e in std::mem::take(&mut self.transient) {
            self.set(e, false);
        }
    }

    /// Holds in force at the current request.
    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Set or clear `e`'s hold from now on.
    pub fn set(&mut self, e: usize, on: bool) {
        if self.on[e] == on {
            return;
        }
        if self.toggled_at[e] != self.now + 1 {
            self.toggled_at[e] = self.now + 1;
            self.before[e] = self.on[e];
            self.toggled.push(e);
        }
        self.on[e] = on;
        if on {
            self.count += 1;
        } else {
            self.count -= 1;
        }
    }

    /// Hold `e` at the current request only.
    pub fn hold_now(&mut self, e: usize) {
        if !self.on[e] {
            self.set(e, true);
            self.transient.push(e);
        }
    }

    /// Release every hold (a request the policy does not decide holds nothing).
    pub fn release_all(&mut self) {
        if self.count == 0 {
            return;
        }
        for e in 0..self.on.len() {
            self.set(e, false);
        }
        self.transient.clear();
        self.epoch += 1;
    }

    /// The holds that began and those that ended at the current request, by episode index:
    /// (held now and not at the previous request, held then and not now).
    pub fn changes(&self) -> (Vec<usize>, Vec<usize>) {
        let (mut began, mut ended) = (Vec::new(), Vec::new());
        for &e in &self.toggled {
            match (self.before[e], self.on[e]) {
                (false, true) => began.push(e),
                (true, false) => ended.push(e),
                _ => {}
            }
        }
        began.sort_unstable();
        ended.sort_unstable();
        (began, ended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_made_for_one_request_ends_at_the_next_unless_made_again() {
        let mut h = Holds::new(3);
        h.begin(0);
        h.hold_now(1);
        h.hold_now(1);
        assert_eq!((h.count(), h.changes()), (1, (vec![1], vec![])));
        h.begin(1);
        h.hold_now(1);
        h.hold_now(2);
        assert_eq!((h.count(), h.changes()), (2, (vec![2], vec![])));
        h.begin(2);
        assert_eq!((h.count(), h.changes()), (0, (vec![], vec![1, 2])));
    }

    #[test]
    fn a_kept_hold_continues_until_cleared_and_a_flip_within_a_request_is_no_change() {
        let mut h = Holds::new(2);
        h.begin(0);
        h.set(0, true);
        h.begin(1);
        h.set(0, false);
        h.set(0, true);
        assert_eq!((h.count(), h.changes()), (1, (vec![], vec![])));
        h.begin(2);
        h.release_all();
        assert_eq!(
            (h.count(), h.changes(), h.epoch()),
            (0, (vec![], vec![0]), 1)
        );
    }
}
