//! Integration tests of smith-auth.
