//! Text formats: the shared line grammar (`grammar`, `body`, `graph`), the reading loop
//! (`reader`, `lines`, `memo`), and one parser per format.

pub(crate) mod body;
pub(crate) mod chunked;
pub(crate) mod ftrace;
pub(crate) mod funcgraph;
pub(crate) mod grammar;
pub(crate) mod graph;
pub(crate) mod kernlog;
pub(crate) mod lines;
pub(crate) mod memo;
pub(crate) mod perf_script;
pub(crate) mod reader;
pub(crate) mod rtla;
pub(crate) mod sysdig;
pub(crate) mod systrace;
