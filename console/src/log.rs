//! The console's log, on stderr: one event, one line. A value in an event (a queue name,
//! a database's message) could hold a line break and forge a line of another operator
//! (an attack review of 0.3.0); so each event is written with every character that
//! draws as nothing or moves text written as its code point (src/text.rs), but the line
//! break that ends it. The fields that carry names are also written quoted (`?queue`),
//! so that no name reads as another field.

use std::io::Write;

use tracing_subscriber::fmt::MakeWriter;

pub fn init() {
    tracing_subscriber::fmt()
        .with_writer(OneLine)
        .with_target(false)
        .with_ansi(false)
        .init();
}

struct OneLine;

impl<'a> MakeWriter<'a> for OneLine {
    type Writer = OneLine;

    fn make_writer(&'a self) -> OneLine {
        OneLine
    }
}

impl Write for OneLine {
    /// The formatter writes each event whole, its line break last.
    fn write(&mut self, event: &[u8]) -> std::io::Result<usize> {
        let line = one_line(&String::from_utf8_lossy(event));
        std::io::stderr().lock().write_all(line.as_bytes())?;
        Ok(event.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// An event as one line: escaped (src/text.rs) but its final line break.
fn one_line(event: &str) -> String {
    let (line, end) = match event.strip_suffix('\n') {
        Some(line) => (line, "\n"),
        None => (event, ""),
    };
    crate::text::escaped(line) + end
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_event_is_one_line() {
        let event = "INFO action queue=forged\nINFO action operator=bob\n";
        assert_eq!(
            super::one_line(event),
            "INFO action queue=forged\\u{a}INFO action operator=bob\n"
        );
    }
}
