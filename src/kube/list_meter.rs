//! Measures a LIST reply as it arrives: each item, the number of items, and the bytes around
//! them, so one huge item or an endless stream of small ones is stopped early, while a page of
//! large legitimate objects still decodes.
//!
//! A list is `{"kind":…,"metadata":{…},"items":[{…},{…}]}`: its items are the values that open
//! at depth 3 (inside the top-level object and the `items` array). The meter follows JSON
//! nesting and strings, byte by byte, without decoding anything; whatever is not inside an item
//! (the envelope, commas, whitespace) is bounded too. It never rejects valid JSON that obeys
//! the bounds, and needs no valid JSON to stay bounded itself.

use super::reply_sizes::MAX_OBJECT_BYTES;

/// Bytes of a list reply outside its items: kind, apiVersion, list metadata (a continue token
/// is a few hundred bytes), separators.
pub const MAX_LIST_ENVELOPE_BYTES: usize = 64 * 1024;
/// The depth at which a list's items open: top-level object (1), `items` array (2), item (3).
const ITEM_DEPTH: u32 = 3;

/// The state of one list reply's measurement.
#[derive(Debug, Clone, Default)]
pub struct ListMeter {
    max_items: usize,
    depth: u32,
    in_string: bool,
    escaped: bool,
    items: usize,
    item_bytes: usize,
    envelope_bytes: usize,
}

impl ListMeter {
    /// A meter for a reply that may hold at most `max_items` items.
    pub fn new(max_items: usize) -> ListMeter {
        ListMeter {
            max_items,
            ..ListMeter::default()
        }
    }

    /// Takes the next bytes of the reply; an error names the bound they broke.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), String> {
        for &byte in bytes {
            self.step(byte)?;
        }
        Ok(())
    }

    fn step(&mut self, byte: u8) -> Result<(), String> {
        if self.in_string {
            match (self.escaped, byte) {
                (true, _) => self.escaped = false,
                (false, b'\\') => self.escaped = true,
                (false, b'"') => self.in_string = false,
                _ => {}
            }
        } else {
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.depth = self.depth.saturating_add(1);
                    if self.depth == ITEM_DEPTH {
                        self.start_item()?;
                    }
                }
                b'}' | b']' => {
                    // The closing byte still belongs to the item it closes.
                    self.count()?;
                    self.depth = self.depth.saturating_sub(1);
                    return Ok(());
                }
                _ => {}
            }
        }
        self.count()
    }

    fn start_item(&mut self) -> Result<(), String> {
        self.items += 1;
        self.item_bytes = 0;
        if self.items > self.max_items {
            return Err(format!(
                "the list holds more than the {} items it may (the page size asked for)",
                self.max_items
            ));
        }
        Ok(())
    }

    fn count(&mut self) -> Result<(), String> {
        if self.depth >= ITEM_DEPTH {
            self.item_bytes += 1;
            if self.item_bytes > MAX_OBJECT_BYTES {
                return Err(format!(
                    "list item {} is larger than {MAX_OBJECT_BYTES} bytes (the limit of one object)",
                    self.items
                ));
            }
        } else {
            self.envelope_bytes += 1;
            if self.envelope_bytes > MAX_LIST_ENVELOPE_BYTES {
                return Err(format!(
                    "the list has more than {MAX_LIST_ENVELOPE_BYTES} bytes outside its items"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::property;

    impl ListMeter {
        /// Items seen so far.
        pub fn items(&self) -> usize {
            self.items
        }
    }

    const PAGE: &str = r#"{"kind":"NamespaceList","apiVersion":"v1","metadata":{"resourceVersion":"812","continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6ODEyLCJzdGFydCI6InRlYW0tMDAwMVx1MDAwMCJ9","remainingItemCount":998},"items":[{"metadata":{"name":"team-0000","uid":"7f2c","resourceVersion":"77","labels":{"kubernetes.io/metadata.name":"team-0000","fanout":"yes"},"managedFields":[{"manager":"kubectl-create","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/metadata.name":{}}}}}]},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}},{"metadata":{"name":"team-0001","annotations":{"note":"a \"quoted\" {brace} [bracket] \\ backslash"}},"status":{"phase":"Active"}}]}"#;

    fn measure(max_items: usize, bytes: &[u8]) -> Result<ListMeter, String> {
        let mut meter = ListMeter::new(max_items);
        meter.feed(bytes)?;
        Ok(meter)
    }

    #[test]
    fn a_real_page_counts_its_items_through_strings_and_escapes() {
        let meter = measure(500, PAGE.as_bytes()).expect("within bounds");
        assert_eq!(meter.items(), 2);
        assert!(measure(1, PAGE.as_bytes()).is_err_and(|e| e.contains("1 items")));
    }

    #[test]
    fn an_item_as_large_as_etcd_stores_passes_and_a_larger_one_is_named() {
        let data = "x".repeat(1536 * 1024);
        let big = format!(r#"{{"items":[{{"data":{{"k":"{data}"}}}}]}}"#);
        assert!(measure(500, big.as_bytes()).is_ok());
        let data = "x".repeat(MAX_OBJECT_BYTES);
        let huge = format!(r#"{{"items":[{{"data":{{"k":"{data}"}}}}]}}"#);
        let err = measure(500, huge.as_bytes()).unwrap_err();
        assert!(err.contains(&MAX_OBJECT_BYTES.to_string()), "{err}");
    }

    #[test]
    fn endless_small_items_and_endless_envelopes_are_cut() {
        let mut endless = br#"{"items":["#.to_vec();
        endless.extend(b"{},".repeat(600));
        assert!(measure(500, &endless).is_err_and(|e| e.contains("500 items")));
        let padding = vec![b' '; MAX_LIST_ENVELOPE_BYTES + 1];
        let err = measure(500, &padding).unwrap_err();
        assert!(err.contains(&MAX_LIST_ENVELOPE_BYTES.to_string()), "{err}");
    }

    /// However a page is split, and however it is mangled, the meter agrees with itself and
    /// stays within its bounds.
    #[test]
    fn property_split_or_mutated_pages_are_measured_alike() {
        property::check("list meter", |random| {
            let input = property::mutate(PAGE.as_bytes(), random);
            let whole = measure(500, &input).map(|m| m.items());
            let mut meter = ListMeter::new(500);
            let mut split = Ok(());
            let mut rest = &input[..];
            while !rest.is_empty() && split.is_ok() {
                let take = (random.below(64) + 1).min(rest.len());
                split = meter.feed(&rest[..take]);
                rest = &rest[take..];
            }
            assert_eq!(split.map(|()| meter.items()), whole);
            assert!(meter.item_bytes <= MAX_OBJECT_BYTES && meter.items <= 501);
        });
    }
}
