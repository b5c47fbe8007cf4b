//! The embedded default datastore: a private `redis-server` started by the core when no URL is given.
//! (Being written; see issue 7.)
