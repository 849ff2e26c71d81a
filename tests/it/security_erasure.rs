//! Issue 21 item 2: erasure finds the person in everything onceform keeps.
