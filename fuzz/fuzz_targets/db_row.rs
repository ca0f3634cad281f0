//! The database row parser: any bytes as the `data` column of a `message` row and of a `part`
//! row (the JSON OpenCode stores, however damaged: the lenient repair runs on it), with the ids
//! and the `time_created` column the reader re-injects.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tierscope_engine::formats::opencode::db::{data_object, message_from_row, part_from_row};
use tierscope_engine::trace::Diagnostics;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the shape of the other columns: NULL data, a missing time.
    let (flags, column) = data.split_first().map_or((0, data), |(f, rest)| (*f, rest));
    let column = (flags & 1 == 0).then_some(column);
    let time = (flags & 2 == 0).then_some(i64::from(flags) * 1_000_003);
    let mut diags = Diagnostics::new();
    let _ = data_object(column, "fuzz row", &mut diags);
    let _ = message_from_row("msg_fuzz", "ses_fuzz", column, time, &mut diags);
    let _ = part_from_row("prt_fuzz", "msg_fuzz", "ses_fuzz", column, &mut diags);
});
