//! Database rows read on the calling thread and parsed on worker threads. Stepping SQLite is
//! about a third of a large session's load and parsing the JSON of its rows the rest; on a
//! second core the two overlap. The connection never leaves its thread: only owned row values
//! cross, in batches, through a bounded channel, so at most a few batches are in flight (a
//! 100k-request session's 390 MB of rows are never all copied at once). Results come back in row
//! order, so a load reads the same whatever the scheduling.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Mutex;

use rusqlite::types::ValueRef;

/// Rows of about this many bytes go to a worker at a time.
const BATCH_BYTES: usize = 1 << 20;
/// …or this many rows, whichever comes first.
const BATCH_ROWS: usize = 2048;

/// `parse` over the rows `next` yields (`Ok(None)`: no more), each result handed to `sink` on
/// the calling thread in row order, as soon as the batches before it are done (so results are not
/// all held at once either). `weight` is a row's size in bytes (what a batch is cut by). When the
/// rows fit in one batch no thread is started. An error from `next` ends the reading; it is
/// returned once the workers are done (what reached `sink` before stays there).
pub(crate) fn for_each_row<T: Send, R: Send, E>(
    mut next: impl FnMut() -> Result<Option<T>, E>,
    weight: impl Fn(&T) -> usize,
    parse: impl Fn(T) -> R + Sync,
    mut sink: impl FnMut(R),
) -> Result<(), E> {
    // The first batch: a small session is parsed right here.
    let (first, more) = fill(&mut next, &weight)?;
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    if !more || workers < 2 {
        first.into_iter().map(&parse).for_each(&mut sink);
        let mut more = more;
        while more {
            let (batch, m) = fill(&mut next, &weight)?;
            batch.into_iter().map(&parse).for_each(&mut sink);
            more = m;
        }
        return Ok(());
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
        let mut take = |k: usize, b: Vec<R>, due: &mut usize| {
            waiting.insert(k, b);
            while let Some(b) = waiting.remove(due) {
                b.into_iter().for_each(&mut sink);
                *due += 1;
            }
        };
        let mut read = Ok(());
        let mut k = 0usize;
        let mut batch = first;
        let mut more = true;
        while more {
            if tx.send((k, std::mem::take(&mut batch))).is_err() {
                break;
            }
            k += 1;
            while let Ok((j, b)) = done_rx.try_recv() {
                take(j, b, &mut due);
            }
            match fill(&mut next, &weight) {
                Ok((b, m)) => (batch, more) = (b, m),
                Err(e) => {
                    read = Err(e);
                    break;
                }
            }
        }
        if read.is_ok() && !batch.is_empty() {
            // The last, partly filled batch.
            let _ = tx.send((k, batch));
        }
        drop(tx);
        for (j, b) in done_rx.iter() {
            if read.is_ok() {
                take(j, b, &mut due);
            }
        }
        read
    })
}

/// One batch of rows; `true` when the rows did not end in it.
fn fill<T, E>(
    next: &mut impl FnMut() -> Result<Option<T>, E>,
    weight: &impl Fn(&T) -> usize,
) -> Result<(Vec<T>, bool), E> {
    let mut batch = Vec::new();
    let mut bytes = 0usize;
    while let Some(row) = next()? {
        bytes += weight(&row);
        batch.push(row);
        if bytes >= BATCH_BYTES || batch.len() >= BATCH_ROWS {
            return Ok((batch, true));
        }
    }
    Ok((batch, false))
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
        assert_eq!(map_rows(next, |_| 1, |x| x), Err("damaged page"));
    }
}
