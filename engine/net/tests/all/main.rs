//! Integration tests for smith-net.
