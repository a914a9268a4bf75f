fn main() {
    use plugin_api::PluginMod_Ref;
    for p in std::env::args().skip(1) {
        let r = abi_stable::library::lib_header_from_path(std::path::Path::new(&p)).and_then(|h| h.init_root_module::<PluginMod_Ref>());
        match r {
            Ok(m) => {
                let c = (m.components())().unwrap();
                println!("{p}: {} {} api {} appenders {}", m.plugin_name(), m.plugin_version(), m.api_version(), c.appenders.len());
                for a in c.appenders.iter() { println!("  {:?}", a.name()); }
            }
            Err(e) => println!("{p}: ERR {}", e.to_string().len()),
        }
    }
}
