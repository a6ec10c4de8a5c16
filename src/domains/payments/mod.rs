//! Payment-provider webhooks (issue 14), in progress: so far the signature verification
//! of the three schemes ([`verify`]). The inbox, the `payments.apply` consumer that grants
//! credits and memberships or marks flash-sale orders paid, the routes and the registry
//! line come next; until then this domain is not in `domains::ALL`.

pub mod verify;
