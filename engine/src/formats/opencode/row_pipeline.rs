//! Database rows read on the calling thread and parsed on worker threads. Stepping SQLite and
//! parsing the JSON of its rows are the two halves of a load; on a second core they overlap. The
//! connection never leaves its thread: only owned row values cross, in batches, through a bounded
//! channel, so at most a few batches are in flight (a large session's rows are never all copied
//! at once). Results come back in row order, so a load reads the same whatever the scheduling.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Mutex;

use rusqlite::types::ValueRef;

/// Rows of about this many bytes go to a worker at a time.
const BATCH_BYTES: usize = 1 << 20;
/// …or this many rows, whichever comes first. Small batches start the workers early and keep
/// little in flight, which matters for the listing's many small message rows; a large load's
/// batches are cut by bytes first.
const BATCH_ROWS: usize = 512;

/// `parse` over the rows `next` yields (`Ok(None)`: no more), each result handed to `sink` on
/// the calling thread in row order, as soon as the batches before it are done (so results are not
/// all held at once either). `weight` is a row's size in bytes (what a batch is cut by). When the
/// rows fit in one batch no thread is started. An error from `next` ends the reading: every row
/// read before it still reaches `sink`, then the error is returned.
pub(crate) fn for_each_row<T: Send, R: Send, E>(
    mut next: impl FnMut() -> Result<Option<T>, E>,
    weight: impl Fn(&T) -> usize,
    parse: impl Fn(T) -> R + Sync,
    mut sink: impl FnMut(R),
) -> Result<(), E> {
    // The first batch: a small session is parsed right here.
    let (mut batch, mut status) = fill(&mut next, &weight, 0);
    // As many parsers as rayon has threads (the cores, or `RAYON_NUM_THREADS`), at most 4;
    // asked only when there is a second batch (the question starts rayon's pool).
    let workers = match status {
        Ok(true) => rayon::current_num_threads().min(4),
        _ => 1,
    };
    if workers < 2 {
        loop {
            let rows = batch.len();
            batch.into_iter().map(&parse).for_each(&mut sink);
            match status {
                Ok(true) => (batch, status) = fill(&mut next, &weight, rows),
                Ok(false) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }
    let (tx, rx) = mpsc::sync_channel::<(usize, Vec<T>)>(workers * 2);
    let (done_tx, done_rx) = mpsc::channel::<(usize, Vec<R>)>();
    let rx = Mutex::new(rx);
    std::thread::scope(|s| {
        for _ in 0..workers {
            let (rx, done_tx, parse) = (&rx, done_tx.clone(), &parse);
            s.spawn(move || loop {
                // A poisoned lock means a worker panicked; the scope re-raises that panic.
                let job = rx.lock().map(|r| r.recv());
                let Ok(Ok((k, batch))) = job else { break };
                let parsed = batch.into_iter().map(parse).collect();
                if done_tx.send((k, parsed)).is_err() {
                    break;
                }
            });
        }
        drop(done_tx);
        // Batches done out of order wait here until the ones before them are sunk.
        let mut waiting: BTreeMap<usize, Vec<R>> = BTreeMap::new();
        let mut due = 0usize;
        let mut take = |k: usize, b: Vec<R>| {
            waiting.insert(k, b);
            while let Some(b) = waiting.remove(&due) {
                b.into_iter().for_each(&mut sink);
                due += 1;
            }
        };
        let mut k = 0usize;
        let read = loop {
            let rows = batch.len();
            // Every row read goes to a worker, those read before an error included. A failed
            // send means every worker is gone, which only a panic does (re-raised below).
            if !batch.is_empty() && tx.send((k, std::mem::take(&mut batch))).is_ok() {
                k += 1;
            }
            while let Ok((j, b)) = done_rx.try_recv() {
                take(j, b);
            }
            match status {
                Ok(true) => (batch, status) = fill(&mut next, &weight, rows),
                Ok(false) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        drop(tx);
        for (j, b) in done_rx.iter() {
            take(j, b);
        }
        read
    })
}

/// One batch of rows, and whether the rows go on after it (`Ok(true)`), ended (`Ok(false)`) or
/// failed (the rows before the failure are in the batch). `rows`: how many the batch before had
/// (room for as many is made at once, not by growing the batch row by row).
fn fill<T, E>(
    next: &mut impl FnMut() -> Result<Option<T>, E>,
    weight: &impl Fn(&T) -> usize,
    rows: usize,
) -> (Vec<T>, Result<bool, E>) {
    let mut batch = Vec::with_capacity(rows);
    let mut bytes = 0usize;
    loop {
        match next() {
            Ok(Some(row)) => {
                bytes += weight(&row);
                batch.push(row);
                if bytes >= BATCH_BYTES || batch.len() >= BATCH_ROWS {
                    return (batch, Ok(true));
                }
            }
            Ok(None) => return (batch, Ok(false)),
            Err(e) => return (batch, Err(e)),
        }
    }
}

/// A column's value, owned, to cross to a worker.
#[derive(Debug, Clone)]
pub(crate) enum Cell {
    Null,
    Integer(i64),
    Real(f64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

impl Cell {
    pub(crate) fn of(v: rusqlite::Result<ValueRef<'_>>) -> Cell {
        match v {
            Ok(ValueRef::Integer(n)) => Cell::Integer(n),
            Ok(ValueRef::Real(x)) => Cell::Real(x),
            Ok(ValueRef::Text(t)) => Cell::Text(t.to_vec()),
            Ok(ValueRef::Blob(b)) => Cell::Blob(b.to_vec()),
            Ok(ValueRef::Null) | Err(_) => Cell::Null,
        }
    }

    pub(crate) fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Cell::Null => ValueRef::Null,
            Cell::Integer(n) => ValueRef::Integer(*n),
            Cell::Real(x) => ValueRef::Real(*x),
            Cell::Text(t) => ValueRef::Text(t),
            Cell::Blob(b) => ValueRef::Blob(b),
        }
    }

    /// Its size, for [`for_each_row`]'s batches.
    pub(crate) fn len(&self) -> usize {
        match self {
            Cell::Text(t) | Cell::Blob(t) => t.len(),
            _ => 8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(n: usize) -> impl FnMut() -> Result<Option<usize>, String> {
        let mut i = 0;
        move || {
            i += 1;
            Ok((i <= n).then_some(i))
        }
    }

    fn map_rows<T: Send, R: Send, E>(
        next: impl FnMut() -> Result<Option<T>, E>,
        weight: impl Fn(&T) -> usize,
        parse: impl Fn(T) -> R + Sync,
    ) -> Result<Vec<R>, E> {
        let mut out = Vec::new();
        for_each_row(next, weight, parse, |r| out.push(r)).map(|()| out)
    }

    #[test]
    fn results_keep_row_order_across_batches() {
        for n in [
            0,
            1,
            BATCH_ROWS - 1,
            BATCH_ROWS,
            BATCH_ROWS + 1,
            5 * BATCH_ROWS + 7,
        ] {
            let out = map_rows(numbers(n), |_| 1, |x| x * 2).expect("no error");
            assert_eq!(out, (1..=n).map(|x| x * 2).collect::<Vec<_>>(), "{n} rows");
        }
    }

    #[test]
    fn batches_are_cut_by_bytes_too() {
        // Rows of 600 KB: two to a batch; order still kept.
        let out = map_rows(numbers(9), |_| 600 << 10, |x| x).expect("no error");
        assert_eq!(out, (1..=9).collect::<Vec<_>>());
    }

    #[test]
    fn an_error_mid_read_is_returned_after_the_workers_stop() {
        let mut i = 0;
        let next = move || {
            i += 1;
            if i == 3 * BATCH_ROWS {
                Err("damaged page")
            } else {
                Ok(Some(i))
            }
        };
        let mut got = Vec::new();
        let read = for_each_row(next, |_| 1, |x| x, |x| got.push(x));
        assert_eq!(read, Err("damaged page"));
        // Every row read before the damage is parsed and sunk, in order.
        assert_eq!(got, (1..3 * BATCH_ROWS).collect::<Vec<_>>());
    }
}
