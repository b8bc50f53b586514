//! linear-ad (facade; filled in by the macro work).
