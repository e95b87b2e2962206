use smith_tui::product::Command as Listed;

use super::super::commands::{BUILTINS, find, merged};

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
