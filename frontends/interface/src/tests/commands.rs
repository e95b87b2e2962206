use smith_tui::product::Command as Listed;

use super::super::commands::{BUILTINS, find, jobs_overlay, merged};

fn listed(name: &str, help: &str, usage: &str) -> Listed {
    Listed {
        name: name.to_owned(),
        help: help.to_owned(),
        usage: usage.to_owned(),
    }
}

#[test]
fn the_table_lists_what_smith_product_lists_in_its_order() {
    let product = smith_tui::fixture::product();
    let table: Vec<Listed> = BUILTINS
        .iter()
        .map(|b| listed(b.name, b.help, b.usage))
        .collect();
    assert_eq!(table, product.commands);
    // smith/product's list merged in changes nothing.
    assert_eq!(merged(product.commands.clone()), product.commands);
}

#[test]
fn without_plugins_the_table_is_listed_and_plugins_merge_by_name() {
    assert_eq!(merged(Vec::new()).len(), BUILTINS.len());
    let list = merged(vec![
        listed("deploy", "ship it", "[TARGET]"),
        listed("model", "pick a model", "[ID]"),
    ]);
    assert_eq!(list.len(), BUILTINS.len() + 1);
    assert_eq!(list[1], listed("model", "pick a model", "[ID]"));
    assert_eq!(list.last(), Some(&listed("deploy", "ship it", "[TARGET]")));
}

#[test]
fn every_row_is_found_by_its_names_and_no_name_is_taken_twice() {
    let mut names: Vec<&str> = Vec::new();
    for b in &BUILTINS {
        for name in std::iter::once(&b.name).chain(b.aliases) {
            assert_eq!(find(name).map(|f| f.name), Some(b.name), "/{name}");
            assert!(!names.contains(name), "/{name} is taken twice");
            names.push(name);
        }
    }
    assert!(find("deploy").is_none());
}

#[test]
fn the_interface_carries_out_the_rows_without_a_function() {
    // The interface handles these before they reach the controller.
    let local: Vec<&str> = BUILTINS
        .iter()
        .filter(|b| b.run.is_none())
        .map(|b| b.name)
        .collect();
    assert_eq!(local, ["help", "search", "copy", "quit"]);
}

#[test]
fn the_jobs_overlay_lists_each_job_or_says_there_are_none() {
    use smith_engine::tools::jobs::JobInfo;
    let job = |id: &str, state: &str, exit_code: Option<i32>, signal: Option<i32>| JobInfo {
        id: id.to_owned(),
        command: "cargo build\n--release".to_owned(),
        cwd: ".".to_owned(),
        pgid: 4242,
        state: state.to_owned(),
        exit_code,
        signal,
        elapsed_ms: 12_345,
        output_bytes: 678,
        output_path: None,
    };
    let smith_tui::Overlay::Info { title, lines } = jobs_overlay(&[
        job("job-1", "exited", Some(2), None),
        job("job-2", "killed", None, Some(15)),
        job("job-3", "running", None, None),
    ]) else {
        panic!("/jobs opens an information overlay");
    };
    assert_eq!(title, " jobs · any key closes ");
    assert_eq!(
        &lines[..3],
        [
            "job-1  exited (code 2)  12.3 s  678 bytes  cargo build",
            "job-2  killed (signal 15)  12.3 s  678 bytes  cargo build",
            "job-3  running  12.3 s  678 bytes  cargo build",
        ]
    );
    let smith_tui::Overlay::Info { lines, .. } = jobs_overlay(&[]) else {
        panic!("/jobs opens an information overlay");
    };
    assert_eq!(lines[0], "No background jobs in this session's runtime.");
}
