//! The checkers, one module per object kind, and the loop that runs them.
//!
//! A kind's module lists its checks in two tables: checks that read one object
//! ([`SingleCheck`]) and checks that compare objects with each other ([`GroupCheck`]).
//! A new check is one function and one row in a table.

mod destination_rule;
mod gateway;
mod gateway_api;
mod security;
mod sidecar;
pub(crate) mod virtual_service;

use crate::index::Index;
use crate::model::{Check, MeshObject, ObjectKind, TypedMeshValidations, Validation};

/// Checks one object; pushes its findings.
pub(crate) type SingleCheck = fn(&MeshObject, &Index<'_>, &mut Vec<Check>);

/// Compares the objects of a kind that matter for namespace `ns` (found through the
/// index); reports each finding with the object it is about.
pub(crate) type GroupCheck = fn(&str, &Index<'_>, &mut dyn FnMut(&MeshObject, Check));

/// The checks of one object kind.
pub(crate) trait KindCheckers {
    /// The kind these checks inspect.
    const KIND: ObjectKind;
    /// Checks that read one object at a time.
    const SINGLE: &'static [SingleCheck];
    /// Checks that compare objects with each other.
    const GROUP: &'static [GroupCheck];
}

/// One run over a namespace, or over one object of it.
pub(crate) struct Evaluation<'e, 'i> {
    ns: &'e str,
    index: &'e Index<'i>,
    target: Option<(ObjectKind, &'e str)>,
    out: TypedMeshValidations,
}

impl<'e, 'i> Evaluation<'e, 'i> {
    /// Validates the objects of `ns`, or only `target` when given.
    pub fn run(
        ns: &'e str,
        index: &'e Index<'i>,
        target: Option<(ObjectKind, &'e str)>,
    ) -> TypedMeshValidations {
        let mut ev = Evaluation { ns, index, target, out: TypedMeshValidations::new() };
        // Every object gets an entry, even when no check fires.
        for kind in ObjectKind::ALL {
            for o in index.objects(kind, ns) {
                if ev.wanted(o) {
                    ev.entry(o);
                }
            }
        }
        ev.kind::<destination_rule::DestinationRules>();
        ev.kind::<virtual_service::VirtualServices>();
        ev.kind::<gateway::Gateways>();
        ev.kind::<security::AuthorizationPolicies>();
        ev.kind::<security::PeerAuthentications>();
        ev.kind::<security::RequestAuthentications>();
        ev.kind::<sidecar::Sidecars>();
        ev.kind::<gateway_api::K8sGateways>();
        ev.kind::<gateway_api::K8sHTTPRoutes>();
        ev.kind::<gateway_api::K8sGRPCRoutes>();
        ev.kind::<gateway_api::K8sReferenceGrants>();
        ev.out
    }

    fn wanted(&self, o: &MeshObject) -> bool {
        o.namespace == self.ns
            && self.target.is_none_or(|(kind, name)| o.kind == kind && o.name == name)
    }

    fn entry(&mut self, o: &MeshObject) -> &mut Validation {
        self.out
            .entry(o.kind.singular().to_string())
            .or_default()
            .entry(o.name.clone())
            .or_insert_with(|| Validation::clean(o.kind, &o.name))
    }

    fn kind<K: KindCheckers>(&mut self) {
        if self.target.is_some_and(|(kind, _)| kind != K::KIND) {
            return;
        }
        let mut found = Vec::new();
        for o in self.index.objects(K::KIND, self.ns) {
            if !self.wanted(o) {
                continue;
            }
            for check in K::SINGLE {
                check(o, self.index, &mut found);
            }
            // Entries exist already; only findings need one (and its key allocations).
            if !found.is_empty() {
                let v = self.entry(o);
                for c in found.drain(..) {
                    v.push(c);
                }
            }
        }
        for check in K::GROUP {
            let index = self.index;
            check(self.ns, index, &mut |o, c| {
                if self.wanted(o) {
                    self.entry(o).push(c);
                }
            });
        }
    }
}
