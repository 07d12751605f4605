//! The guards: the fence of a claim, the state rule and the terminal guard, what no caller
//! can get around. They stand on the machinery alone (tests/reference/check.py holds the
//! floors).

/// The catalog look-ups the guard and the link share.
pub mod catalog;
/// A claim's fence (status `in_flight`, its generation), shared by the calls on a claim.
pub mod fence;
/// The terminal guard's trigger on business tables.
pub mod guard;
/// The state rule every row obeys, a CHECK of both tables.
pub mod job_state;
/// The business row stamped in the finalize's transaction, as the linker.
pub mod stamp;
