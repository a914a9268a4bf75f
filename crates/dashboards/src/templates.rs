//! Template precedence: the app's namespace, the mesh namespace, folders, built-ins.
//!
//! A provider returns its templates plus, possibly, *warnings*: templates with an empty name
//! (no request can name one) whose title is the message. Plugins cannot log, so they report
//! bad files and resources this way; [`split_warnings`] separates them and the catalog logs
//! them.

use std::collections::HashMap;

use plugin_api::{DashboardTemplate, ProviderTier};

/// The templates one provider returned, with where it ranks.
#[derive(Debug, Clone)]
pub struct ProviderTemplates {
    /// Provider name (for log lines).
    pub provider: String,
    /// Its precedence.
    pub tier: ProviderTier,
    /// What its `templates` call returned (warnings included).
    pub templates: Vec<DashboardTemplate>,
}

/// Splits a provider's list into real templates and warning messages.
pub fn split_warnings(list: Vec<DashboardTemplate>) -> (Vec<DashboardTemplate>, Vec<String>) {
    let mut templates = Vec::with_capacity(list.len());
    let mut warnings = Vec::new();
    for t in list {
        if t.name.is_empty() {
            warnings.push(t.title.to_string());
        } else {
            templates.push(t);
        }
    }
    (templates, warnings)
}

/// Every template of every provider, one per (tier, namespace, name).
#[derive(Debug, Clone, Default)]
pub struct TemplateCatalog {
    /// (tier, namespace, name) -> template; first provider in load order wins.
    entries: Vec<(ProviderTier, DashboardTemplate)>,
    index: HashMap<(ProviderTier, String, String), usize>,
    warnings: Vec<String>,
}

impl TemplateCatalog {
    /// Builds the catalog from providers in `plugins.dirs` load order. Duplicates within one
    /// tier (and, for cluster templates, one namespace) keep the first and log the other;
    /// provider warnings are logged too. Both are kept in [`TemplateCatalog::warnings`].
    pub fn new(providers: Vec<ProviderTemplates>) -> Self {
        let mut cat = TemplateCatalog::default();
        let mut origin: HashMap<(ProviderTier, String, String), String> = HashMap::new();
        for p in providers {
            let (templates, warnings) = split_warnings(p.templates);
            for w in warnings {
                tracing::warn!(provider = %p.provider, "{w}");
                cat.warnings.push(format!("{}: {w}", p.provider));
            }
            for mut t in templates {
                if p.tier != ProviderTier::Cluster {
                    // Only cluster resources are namespaced; ignore stray values from others.
                    t.namespace = "".into();
                }
                let key = (p.tier, t.namespace.to_string(), t.name.to_string());
                if let Some(first) = origin.get(&key) {
                    let msg = format!(
                        "dashboard template `{}` of provider `{}` ignored: provider `{first}` of the same precedence defines it first",
                        t.name, p.provider
                    );
                    tracing::warn!("{msg}");
                    cat.warnings.push(msg);
                    continue;
                }
                origin.insert(key.clone(), p.provider.clone());
                cat.index.insert(key, cat.entries.len());
                cat.entries.push((p.tier, t));
            }
        }
        cat
    }

    /// What was logged while building: provider warnings and ignored duplicates.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The lookup order for an app in `app_ns`: (tier, namespace) pairs.
    fn order<'a>(app_ns: &'a str, mesh_ns: &'a str) -> [(ProviderTier, &'a str); 4] {
        [
            (ProviderTier::Cluster, app_ns),
            (ProviderTier::Cluster, mesh_ns),
            (ProviderTier::Folder, ""),
            (ProviderTier::Builtin, ""),
        ]
    }

    /// The template `name` as an app in `app_ns` sees it.
    pub fn resolve(&self, name: &str, app_ns: &str, mesh_ns: &str) -> Option<&DashboardTemplate> {
        Self::order(app_ns, mesh_ns).into_iter().find_map(|(tier, ns)| {
            self.index.get(&(tier, ns.to_string(), name.to_string())).map(|&i| &self.entries[i].1)
        })
    }

    /// Every template an app in `app_ns` sees, one per name (the winning one), in
    /// precedence order and, within one level, in provider order.
    pub fn visible(&self, app_ns: &str, mesh_ns: &str) -> Vec<&DashboardTemplate> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for (tier, ns) in Self::order(app_ns, mesh_ns) {
            for (t_tier, t) in &self.entries {
                if *t_tier == tier && t.namespace.as_str() == ns && seen.insert(t.name.as_str()) {
                    out.push(t);
                }
            }
        }
        out
    }

    /// Names an app in `app_ns` can request, sorted (for error messages).
    pub fn names(&self, app_ns: &str, mesh_ns: &str) -> Vec<String> {
        let mut v: Vec<String> =
            self.visible(app_ns, mesh_ns).iter().map(|t| t.name.to_string()).collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use plugin_api::DashboardTemplate;

    use super::*;

    fn t(name: &str, title: &str, ns: &str) -> DashboardTemplate {
        DashboardTemplate {
            name: name.into(),
            runtime: "R".into(),
            title: title.into(),
            discover_on: "".into(),
            namespace: ns.into(),
            charts: Default::default(),
        }
    }

    fn p(
        provider: &str,
        tier: ProviderTier,
        templates: Vec<DashboardTemplate>,
    ) -> ProviderTemplates {
        ProviderTemplates { provider: provider.into(), tier, templates }
    }

    fn catalog() -> TemplateCatalog {
        // Deliberately listed lowest tier first: precedence must not depend on load order.
        TemplateCatalog::new(vec![
            p(
                "builtin",
                ProviderTier::Builtin,
                vec![
                    t("go", "builtin go", ""),
                    t("vertx", "builtin vertx", ""),
                    t("node", "builtin node", ""),
                ],
            ),
            p(
                "folder",
                ProviderTier::Folder,
                vec![
                    t("go", "folder go", ""),
                    t("vertx", "folder vertx", ""),
                    t("", "f.toml: broken", ""),
                ],
            ),
            p(
                "monitoring",
                ProviderTier::Cluster,
                vec![
                    t("vertx", "mesh vertx", "istio-system"),
                    t("vertx", "app vertx", "bookinfo"),
                    t("go", "other go", "other"),
                ],
            ),
        ])
    }

    #[test]
    fn app_namespace_then_mesh_then_folder_then_builtin() {
        let c = catalog();
        assert_eq!(
            c.resolve("vertx", "bookinfo", "istio-system").unwrap().title.as_str(),
            "app vertx"
        );
        assert_eq!(
            c.resolve("vertx", "shop", "istio-system").unwrap().title.as_str(),
            "mesh vertx"
        );
        assert_eq!(
            c.resolve("go", "bookinfo", "istio-system").unwrap().title.as_str(),
            "folder go",
            "other namespaces do not count"
        );
        assert_eq!(
            c.resolve("node", "bookinfo", "istio-system").unwrap().title.as_str(),
            "builtin node"
        );
        assert!(c.resolve("nope", "bookinfo", "istio-system").is_none());
        assert!(c.resolve("", "bookinfo", "istio-system").is_none(), "warnings are not templates");
    }

    #[test]
    fn visible_lists_each_name_once_with_the_winner() {
        let c = catalog();
        let titles: Vec<_> =
            c.visible("bookinfo", "istio-system").iter().map(|t| t.title.to_string()).collect();
        assert_eq!(titles, ["app vertx", "folder go", "builtin node"]);
        assert_eq!(c.names("bookinfo", "istio-system"), ["go", "node", "vertx"]);
    }

    #[test]
    fn warnings_and_same_tier_duplicates_are_reported_first_wins() {
        let c = TemplateCatalog::new(vec![
            p("folder-a", ProviderTier::Folder, vec![t("go", "a", "")]),
            p("folder-b", ProviderTier::Folder, vec![t("go", "b", ""), t("", "x.yaml: bad", "")]),
        ]);
        assert_eq!(c.resolve("go", "ns", "mesh").unwrap().title.as_str(), "a");
        let w = c.warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w.iter().any(|m| m.contains("folder-b") && m.contains("x.yaml: bad")));
        assert!(w.iter().any(|m| m.contains("`go`") && m.contains("folder-a")));
    }
}
