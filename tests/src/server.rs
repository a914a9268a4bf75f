//! Starts the meshlens binary on 127.0.0.1:0 and talks to it.
