// Generated from conveyor's /openapi.json by scripts/generate.mjs: do not edit.
// `npm run generate` (under the repository's scripts/with-server.sh) rewrites it; CI fails when it drifts.

export interface paths {
    "/assets/conveyor-client.js": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The client bundle the pages load. Revalidated after five minutes: a new server version
         *     brings a new bundle, and its pages must not run an old one for long.
         */
        get: operations["client_js"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/demo": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /demo`: a page that submits a task and draws its progress from the WebSocket. */
        get: operations["demo"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /healthz`: the process is up. */
        get: operations["healthz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /metrics`: Prometheus text format, gauges refreshed first. */
        get: operations["metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/ops": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /ops`: the operations console. */
        get: operations["page"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /readyz`: database, broker and dedupe store answer; 503 naming those that don't.
         *     Optional dependencies (the search backend) are listed too; one failing makes the
         *     status `degraded`, still 200.
         */
        get: operations["readyz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/alerts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["list_alerts"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/canary": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /v1/admin/canary`. */
        get: operations["show_canary"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/dead-letters": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["list_dead_letters"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/dead-letters/replay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post: operations["replay_dead_letters_by_filter"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/dead-letters/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["show_dead_letter"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/dead-letters/{id}/discard": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post: operations["discard_dead_letter"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/dead-letters/{id}/replay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post: operations["replay_dead_letter"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/flash-sales": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /v1/admin/flash-sales`: every sale, newest first. */
        get: operations["list_flash_sales"];
        put?: never;
        /** `POST /v1/admin/flash-sales`: a new sale, loaded into the stock store at once. */
        post: operations["create_flash_sale"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/flash-sales/{id}/reconcile": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** `POST /v1/admin/flash-sales/{id}/reconcile`: units left + live orders against stock. */
        post: operations["reconcile"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/ops": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["ops_snapshot"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/ops/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["ops_stream"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/orders/{id}/mark-paid": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** `POST /v1/admin/orders/{id}/mark-paid`: what the payment domain will call. */
        post: operations["mark_paid"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/orgs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post: operations["create_org"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/orgs/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/orgs/{id}/members": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post: operations["admin_add"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/orgs/{id}/members/{user_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        delete: operations["admin_remove"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/orgs/{id}/plan": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put: operations["set_plan"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/queues/{queue}/concurrency": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put: operations["set_queue_concurrency"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/tasks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /v1/admin/tasks?user_id=&status=&kind=&since=&until=&metadata=&cursor=&limit=`. */
        get: operations["find_tasks"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/tasks/bulk": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** `POST /v1/admin/tasks/bulk`: a dry run counts; a run acts on a slice, paced. */
        post: operations["bulk_tasks"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/users/{id}/keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["list_keys"];
        put?: never;
        post: operations["create_key"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/users/{id}/keys/{key_id}/revoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post: operations["revoke_key"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/users/{id}/keys/{key_id}/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post: operations["rotate_key"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/users/{id}/limits": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["get_limits"];
        put: operations["set_limits"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/users/{id}/plan": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put: operations["set_user_plan"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/approvals/{token}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** `POST /v1/approvals/{token}`: the one-time link. */
        post: operations["decide_by_link"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/callbacks/providers/{provider}/{token}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST /v1/callbacks/providers/{provider}/{token}`: 202 when it woke a check, 404 for
         *     a token no waiting job has, 401 for a signature that does not match.
         */
        post: operations["callback"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/files/{key}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /v1/files/{key}?exp=&sig=` (URLs come from the API's `url` fields). */
        get: operations["download"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/flash-sales/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /v1/flash-sales/{id}`: the sale, its state and the units left. */
        get: operations["show_flash_sale"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/flash-sales/{id}/orders": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** `POST /v1/flash-sales/{id}/orders`: take one unit and queue the order. */
        post: operations["order"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/materials": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /v1/materials?cursor=&limit=`: the caller's materials, newest first. */
        get: operations["list_materials"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/materials/search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /v1/materials/search?q=&kind=&cursor=&limit=`: the caller's materials that match
         *     every word of `q`, newest first, with highlights; or, with `semantic=` instead of `q`,
         *     those closest in meaning, best first. Changes become searchable when the sync has run
         *     (within about a second).
         */
        get: operations["find"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/materials/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /v1/materials/{id}`. */
        get: operations["show_material"];
        put?: never;
        post?: never;
        /** `DELETE /v1/materials/{id}`: gone from lists at once, from search when the sync runs. */
        delete: operations["delete_material"];
        options?: never;
        head?: never;
        /** `PATCH /v1/materials/{id}`: change the title and/or tags; the search index follows. */
        patch: operations["edit_material"];
        trace?: never;
    };
    "/v1/me": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["me"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/me/invitations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["my_invitations"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/me/invitations/{id}/accept": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post: operations["accept_invitation"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/me/invitations/{id}/decline": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post: operations["decline_invitation"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/me/ledger": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["ledger"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/me/usage": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["usage"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/orders": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /v1/orders`: the caller's orders, newest first. */
        get: operations["list_orders"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/orders/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /v1/orders/{id}`. */
        get: operations["read_order"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/org": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["mine"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/org/invitations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["org_invitations"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/org/invitations/{id}/revoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post: operations["revoke_invitation"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/org/members": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post: operations["invite_member"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/org/members/{user_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        delete: operations["owner_remove"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/payments": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** `POST /v1/payments`: a payment intent for a product or a flash-sale order. */
        post: operations["create_payment"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/payments/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /v1/payments/{id}`: the caller's payment and its events. */
        get: operations["show_payment"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/streams/{stream}/{id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["stream"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tasks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /v1/tasks?status=&kind=&since=&until=&metadata=key:value&cursor=&limit=`: the
         *     caller's tasks, newest first; `next_cursor` continues.
         */
        get: operations["list_tasks"];
        put?: never;
        /**
         * `POST /v1/tasks` → 202 with the task and a `Location`; credits reserved, task and run
         *     message committed together.
         */
        post: operations["submit"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tasks/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /v1/tasks/{id}`. */
        get: operations["show_task"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tasks/{id}/approval": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** `POST /v1/tasks/{id}/approval`. */
        post: operations["decide"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tasks/{id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** `POST /v1/tasks/{id}/cancel` → CANCELED and refunded, or 409 if already terminal. */
        post: operations["cancel"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tasks/{id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get: operations["task_stream"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tasks/{id}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST /v1/tasks/{id}/retry` → 201 with the new task (it names this one in `retry_of`),
         *     or 200 with the retry made before.
         */
        post: operations["retry_task"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/uploads": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /v1/uploads?cursor=&limit=`: the caller's uploads, newest first. */
        get: operations["list_uploads"];
        put?: never;
        /** `POST /v1/uploads` (`multipart/form-data`: `purpose`, then `file`). */
        post: operations["create_upload"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/uploads/presign": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** `POST /v1/uploads/presign`. */
        post: operations["presign_upload"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/uploads/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /v1/uploads/{id}`: status, size, type, checksum and, once READY, a signed URL. */
        get: operations["show_upload"];
        put?: never;
        post?: never;
        /**
         * `DELETE /v1/uploads/{id}`: gone at once for the API (its URLs stop working); the
         *     bytes are removed after `storage.delete_grace_secs`, and the quota freed then.
         */
        delete: operations["delete_upload"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/uploads/{id}/complete": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** `POST /v1/uploads/{id}/complete`. */
        post: operations["complete"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/endpoints": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /v1/webhooks/endpoints`: the caller's endpoints, oldest first. */
        get: operations["list_webhook_endpoints"];
        put?: never;
        /** `POST /v1/webhooks/endpoints`: a new endpoint, with its signing secret (shown once). */
        post: operations["create_webhook_endpoint"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/endpoints/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /v1/webhooks/endpoints/{id}`. */
        get: operations["show_webhook_endpoint"];
        put?: never;
        post?: never;
        /**
         * `DELETE /v1/webhooks/endpoints/{id}`: no more deliveries (those still being attempted
         *     end as FAILED).
         */
        delete: operations["delete_webhook_endpoint"];
        options?: never;
        head?: never;
        /**
         * `PATCH /v1/webhooks/endpoints/{id}`: change its URL, description, event types, or
         *     enable or disable it.
         */
        patch: operations["edit_webhook_endpoint"];
        trace?: never;
    };
    "/v1/webhooks/endpoints/{id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /v1/webhooks/endpoints/{id}/deliveries`: newest first, each with its latest
         *     attempt (status code, the answer's first bytes, latency).
         */
        get: operations["list_webhook_deliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/endpoints/{id}/deliveries/{delivery}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** `GET /v1/webhooks/endpoints/{id}/deliveries/{delivery}`: with every attempt (`log`). */
        get: operations["show_webhook_delivery"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/endpoints/{id}/deliveries/{delivery}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST /v1/webhooks/endpoints/{id}/deliveries/{delivery}/retry`: sends a finished
         *     delivery (answered or given up) again, with its `webhook-id`; retried on the usual
         *     schedule if it fails.
         */
        post: operations["retry_webhook_delivery"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/endpoints/{id}/rotate-secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST /v1/webhooks/endpoints/{id}/rotate-secret`: a new secret (shown once); the old
         *     one signs beside it for `webhooks.secret_overlap_secs`, so receivers can switch
         *     without missing a delivery.
         */
        post: operations["rotate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/endpoints/{id}/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST /v1/webhooks/endpoints/{id}/test`: sends a `webhook.test` event to this endpoint
         *     (whatever it subscribed to); its delivery is in the log like any other.
         */
        post: operations["test"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/payments/alipay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST /v1/webhooks/payments/alipay`: an Alipay asynchronous notify (form-encoded,
         *     RSA2-signed). TRADE_SUCCESS and TRADE_FINISHED pay; a notify with `refund_fee` refunds
         *     that much; TRADE_CLOSED without one is acknowledged.
         */
        post: operations["alipay_webhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/payments/hmac": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** `POST /v1/webhooks/payments/hmac`: a provider's signed event. */
        post: operations["hmac_webhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/payments/wechat": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * `POST /v1/webhooks/payments/wechat`: a WeChat Pay API v3 notification (headers
         *     `Wechatpay-Timestamp`, `-Nonce`, `-Signature`, `-Serial`; `resource` encrypted with the
         *     APIv3 key). `TRANSACTION.SUCCESS` with `trade_state` SUCCESS pays, `REFUND.SUCCESS`
         *     refunds `amount.refund`; anything else is acknowledged.
         */
        post: operations["wechat_webhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/ws": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Checks Origin and the ticket before upgrading: a refused client never gets a socket. */
        get: operations["upgrade"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/ws-tickets": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post: operations["issue"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description The intake answer: the order is on its way. */
        Accepted: {
            order_id: string;
            status: components["schemas"]["OrderStatus"];
        };
        ActionView: {
            action: string;
            actor: string;
            /** Format: date-time */
            at: string;
        };
        AlertView: {
            /** Format: date-time */
            fired_at: string;
            /** Format: int64 */
            id: number;
            queue: string;
            /** Format: date-time */
            resolved_at?: string | null;
            rule: string;
            /** @description `firing` or `resolved`. */
            state: string;
            summary: string;
            /** Format: double */
            threshold: number;
            /** Format: double */
            value: number;
        };
        /** @description The alerts as the console and `GET /v1/admin/alerts` show them. */
        AlertsView: {
            active: components["schemas"]["AlertView"][];
            /** @description The latest episodes, firing or resolved, newest first. */
            history: components["schemas"]["AlertView"][];
        };
        /** @description One attempt of a delivery. */
        AttemptView: {
            /** Format: date-time */
            at: string;
            /** Format: int32 */
            attempt: number;
            error?: string | null;
            /** Format: int32 */
            latency_ms: number;
            response?: string | null;
            /** Format: int32 */
            status?: number | null;
        };
        BulkAnswer: {
            action: string;
            done: components["schemas"]["BulkItem"][];
            /**
             * Format: int64
             * @description Tasks the filter matched before this call.
             */
            matched: number;
            /**
             * Format: int64
             * @description Tasks still matching after it.
             */
            remaining: number;
        };
        /** @description What one task came to. */
        BulkItem: {
            id: string;
            /** @description `retried`, `retried_before`, `canceled` or `skipped` (ended meanwhile, or refused). */
            outcome: string;
            /** @description The retry's task id. */
            retry_id?: string | null;
        };
        /** @description A bulk action by filter. */
        BulkRequest: {
            /**
             * @description `retry` (FAILED tasks by default; each is retried once) or `cancel` (PENDING,
             *     RETRYING, PROCESSING and WAITING ones by default).
             */
            action: string;
            /** @description Count only. */
            dry_run?: boolean;
            /** @description Which tasks (`cursor` and `limit` are ignored here). */
            filter?: components["schemas"]["FindQuery"];
            /**
             * Format: int64
             * @description Tasks acted on by this call, 1 to 100 (default 50): repeat while `remaining` > 0.
             */
            limit?: number | null;
        };
        /** @description The canary at a glance. */
        CanaryView: {
            /**
             * Format: int64
             * @description Milliseconds between pings; 0 when the canary is off.
             */
            interval_ms: number;
            last_round_trip?: components["schemas"]["PingView"] | null;
            /**
             * Format: int64
             * @description Pings sent more than 30 s ago that have not come back.
             */
            overdue: number;
            /** @description The newest pings, newest first. */
            pings: components["schemas"]["PingView"][];
        };
        /** @description A queue's concurrency: deliveries each of its consumer processes takes at once. */
        Concurrency: {
            /**
             * Format: int32
             * @description 1 to 10000.
             */
            prefetch: number;
        };
        /** @description A new endpoint. */
        CreateEndpoint: {
            description?: string | null;
            /**
             * @description The event types it receives (`task.succeeded`, `task.failed`, `task.canceled`,
             *     `order.paid`, `order.canceled`, `payment.succeeded`, `payment.refunded`,
             *     `material.created`); absent or empty: every type.
             */
            event_types?: string[] | null;
            /**
             * @description Where events are POSTed: `https://` (a public address; `http://` and private
             *     addresses only where the server allows them, for development).
             */
            url: string;
        };
        /**
         * @description Where a dead letter stands.
         * @enum {string}
         */
        DeadLetterStatus: "dead" | "replayed" | "discarded" | "needs_fix";
        DeadLetterSummary: {
            by_queue: components["schemas"]["Waiting"][];
            /** Format: int64 */
            waiting: number;
        };
        /** @description What operators see of a dead letter; `body` and `actions` only in the detail view. */
        DeadLetterView: {
            actions?: components["schemas"]["ActionView"][] | null;
            /** Format: int32 */
            attempts: number;
            body?: unknown;
            /** @description What the message was about (a task, order, payment, material or delivery id). */
            business_id?: string | null;
            /** @description The consumer instance that handled it last. */
            consumer?: string | null;
            /** Format: date-time */
            created_at: string;
            history: unknown;
            /** Format: int64 */
            id: number;
            kind: string;
            last_error: string;
            message_id: string;
            queue: string;
            reason: string;
            status: string;
            /** @description The distributed trace the message was sent in (when the sender exported traces). */
            trace_id?: string | null;
            /** Format: date-time */
            updated_at: string;
        };
        DecisionRequest: {
            /** @description Why (kept in the audit log; a rejection's shows in the task's error). */
            comment?: string | null;
            /** @description `approve` or `reject`. */
            decision: string;
        };
        /**
         * @description A delivery's state, stored as its name.
         * @enum {string}
         */
        DeliveryStatus: "PENDING" | "SUCCEEDED" | "FAILED";
        /** @description One delivery of an event to an endpoint, with its latest attempt. */
        DeliveryView: {
            /** Format: int32 */
            attempts: number;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            delivered_at?: string | null;
            /** @description The event's id: every delivery's `webhook-id`, retries included. */
            event_id: string;
            event_type: string;
            id: string;
            /** @description Why the last attempt got no answer (a timeout, a refused connection). */
            last_error?: string | null;
            /** Format: int32 */
            last_latency_ms?: number | null;
            last_response?: string | null;
            /**
             * Format: int32
             * @description The last answer's status code, first bytes and time.
             */
            last_status?: number | null;
            /** @description Every attempt, in order (when one delivery is read). */
            log?: components["schemas"]["AttemptView"][] | null;
            /** Format: date-time */
            next_attempt_at?: string | null;
            /**
             * @description `PENDING` (being attempted), `SUCCEEDED` (answered 2xx) or `FAILED` (given up, or
             *     its endpoint was disabled or deleted).
             */
            status: components["schemas"]["DeliveryStatus"];
        };
        /** @description The caller's endpoints. */
        EndpointList: {
            items: components["schemas"]["EndpointView"][];
        };
        /** @description A webhook endpoint. */
        EndpointView: {
            /** Format: date-time */
            created_at: string;
            description: string;
            /** @description Why the platform disabled it (every delivery failed for days). */
            disabled_reason?: string | null;
            enabled: boolean;
            /** @description The event types it receives; empty: every type. */
            event_types: string[];
            /**
             * Format: date-time
             * @description Since when every delivery has failed (`null`: the last one succeeded).
             */
            failing_since?: string | null;
            id: string;
            /**
             * Format: date-time
             * @description While a rotated-out secret still signs beside the new one.
             */
            previous_secret_until?: string | null;
            /** Format: date-time */
            updated_at: string;
            url: string;
        };
        /** @description A new endpoint (or a rotated secret): the secret is shown this once. */
        EndpointWithSecret: components["schemas"]["EndpointView"] & {
            /** @description `whsec_…`: verify deliveries with it (any Standard Webhooks library). Shown once. */
            secret: string;
        };
        /** @description Every error answer: `{"error": {...}}` with a 4xx/5xx status. */
        ErrorBody: {
            error: components["schemas"]["ErrorDetail"];
        };
        ErrorDetail: {
            /** Format: int64 */
            balance?: number | null;
            /**
             * @description Machine-readable: `invalid_request`, `invalid_field`, `unauthorized`,
             *     `forbidden`, `plan_required`, `insufficient_credits`, `not_found`, `conflict`,
             *     `idempotency_key_reused`, `rate_limited`, `too_many_tasks_in_flight`,
             *     `too_many_streams`, …
             */
            code: string;
            /** @description The request field at fault, when there is one. */
            field?: string | null;
            message: string;
            /**
             * Format: int64
             * @description With `insufficient_credits`: the cost and the balance.
             */
            needed?: number | null;
            /**
             * @description With `plan_required`: the caller's plan, and the plans that include what was
             *     asked.
             */
            plan?: string | null;
            plans?: string[] | null;
        };
        /**
         * @description An inbox event's state, stored as its name: `RECEIVED`, then `APPLIED` once, by
         *     whoever applies it; `WAITING` while a refund waits for its payment to be applied
         *     first (events out of order).
         * @enum {string}
         */
        EventStatus: "RECEIVED" | "WAITING" | "APPLIED";
        /** @description One provider event of a payment. */
        EventView: {
            /**
             * Format: int64
             * @description A refund's amount (`refund_total`: the total refunded by then).
             */
            amount: number;
            /** Format: date-time */
            applied_at?: string | null;
            event_id: string;
            /** @description `paid`, `refund` or `refund_total` (Alipay: refunds up to a total). */
            kind: string;
            note?: string | null;
            provider: string;
            /** Format: date-time */
            received_at: string;
            /** @description `RECEIVED`, `WAITING` (a refund before its payment) or `APPLIED`. */
            status: components["schemas"]["EventStatus"];
        };
        /** @description A file of a material or a task's result. */
        FileView: {
            content_type?: string | null;
            /** Format: int64 */
            duration_ms?: number | null;
            /** Format: int32 */
            height?: number | null;
            id: string;
            sha256?: string | null;
            /** Format: int64 */
            size: number;
            /** @description A signed download URL that expires at `url_expires_at`. */
            url: string;
            /** Format: date-time */
            url_expires_at: string;
            /** Format: int32 */
            width?: number | null;
        };
        /** @description What to find. */
        FindQuery: {
            /** @description `next_cursor` of the previous page (a task id). */
            cursor?: string | null;
            kind?: components["schemas"]["TaskKind"] | null;
            /**
             * Format: int64
             * @description Page size, 1 to 100 (default 20).
             */
            limit?: number | null;
            /**
             * @description Only tasks submitted with this metadata: `key:value` (the first `:` splits; a key
             *     of 1 to 40 letters, digits, `_`, `-` or `.`, a value of at most 200 characters).
             */
            metadata?: string | null;
            /**
             * Format: date-time
             * @description Only tasks created at or after this time (RFC 3339).
             */
            since?: string | null;
            status?: components["schemas"]["TaskStatus"] | null;
            /**
             * Format: date-time
             * @description Only tasks created before this time (RFC 3339).
             */
            until?: string | null;
            /** @description Admins only: one tenant's tasks. */
            user_id?: string | null;
        };
        /**
         * @description Where an invitation stands, as its views show it (`expired` is read off the clock).
         * @enum {string}
         */
        InvitationStatus: "pending" | "accepted" | "declined" | "revoked" | "expired";
        /** @description An invitation to an organisation. */
        InvitationView: {
            /** Format: date-time */
            answered_at?: string | null;
            /** Format: date-time */
            created_at: string;
            /**
             * Format: date-time
             * @description Not accepted by then, it expires (7 days after it was sent).
             */
            expires_at: string;
            id: string;
            /** @description The owner who invited. */
            invited_by: string;
            org_id: string;
            /** @description The organisation's name, for the invited user to know who asks. */
            org_name?: string | null;
            status: components["schemas"]["InvitationStatus"];
            /** @description The invited user: the only one who may accept or decline it. */
            user_id: string;
        };
        /** @description A key as listed (never the key itself). */
        KeyInfo: {
            /** Format: date-time */
            created_at: string;
            /**
             * Format: date-time
             * @description Set when rotated: the key works until then.
             */
            expires_at?: string | null;
            id: string;
            /** @description The key's first characters, to tell keys apart. */
            prefix: string;
            /**
             * Format: date-time
             * @description Set when revoked: the key no longer works.
             */
            revoked_at?: string | null;
        };
        /** @description One movement of the balance (or of the membership, with `delta` 0). */
        LedgerEntry: {
            /** Format: date-time */
            at: string;
            /** Format: int64 */
            delta: number;
            /**
             * @description What caused it (`payment:<id>`, `reserve:<task>`, …); unique: an effect is booked
             *     once.
             */
            effect: string;
            /** Format: int64 */
            id: number;
            /** @description `grant`, `reserve`, `consume`, `refund`, `take_back`, `membership`, … */
            reason: string;
        };
        LimitUse: {
            /**
             * Format: int32
             * @description In effect (0: off).
             */
            limit: number;
            /**
             * Format: int64
             * @description Held now (caps on things held only).
             */
            used?: number | null;
        };
        MarkPaidRequest: {
            /** @description The payment provider's reference (1 to 128 characters). */
            payment_ref: string;
        };
        /** @description What a mark-paid did. */
        MarkPaidView: {
            order: components["schemas"]["OrderView"];
            /** @description `paid`, `already_paid` or `paid_after_cancel` (recorded for refund). */
            outcome: string;
        };
        /** @description A material as its owner sees it. */
        MaterialView: {
            /** @description Text for text kinds; JSON (URL and metadata) for media. */
            content: string;
            /** Format: date-time */
            created_at: string;
            /**
             * @description Its files (images, posters, models) with download URLs that expire; filled by
             *     `GET /v1/materials/{id}`, absent from lists.
             */
            files?: components["schemas"]["FileView"][];
            id: string;
            kind: string;
            tags: string[];
            task_id: string;
            title: string;
            /** Format: date-time */
            updated_at?: string | null;
            /**
             * Format: int64
             * @description Incremented by every change.
             */
            version: number;
        };
        /** @description The caller as `GET /v1/me` shows them. */
        MeView: {
            /** Format: date-time */
            created_at: string;
            /** Format: int64 */
            credits: number;
            id: string;
            is_admin: boolean;
            /**
             * @description Every limit in effect for the caller's tenant, by key, with what it holds of the
             *     caps that can say (`used`).
             */
            limits: {
                [key: string]: components["schemas"]["LimitUse"];
            };
            membership?: components["schemas"]["MembershipView"] | null;
            name: string;
            /** @description The plan that applies, and whose it is. */
            plan: components["schemas"]["PlanView"];
            /** @description Bytes of stored files (uploads and generated) against the quota. */
            storage: components["schemas"]["StorageUse"];
        };
        MemberView: {
            id: string;
            name: string;
            owner: boolean;
        };
        MembershipView: {
            /** @description `until` is still ahead. */
            active: boolean;
            /**
             * Format: date-time
             * @description A member until then (renewals stack).
             */
            until: string;
        };
        /** @description A key just made: the key itself appears here only. */
        NewKeyView: components["schemas"]["KeyInfo"] & {
            /** @description `cvk_…`: store it now, it is never shown again. */
            key: string;
        };
        NewMember: {
            /** @description The user to add (admins) or invite (an owner). */
            user_id: string;
        };
        NewOrg: {
            /** @description 1 to 128 characters, not blank. */
            name: string;
            /** @description The user who owns it (joins it; may not belong to another). */
            owner: string;
        };
        /**
         * @description A stored file's state, stored as its name.
         * @enum {string}
         */
        ObjectStatus: "PENDING" | "READY" | "REJECTED";
        /** @description The answer to a replay or discard. */
        OperatedView: {
            /** @description It had been done before: nothing happened this time. */
            already: boolean;
            dead_letter: components["schemas"]["DeadLetterView"];
        };
        /** @description One Server-Sent Event of the console's stream. */
        OpsFrame: {
            /** @description JSON: a [`Snapshot`], the body of `GET /v1/admin/ops`. */
            data: string;
            /** @description Always `snapshot`. */
            event: string;
        };
        /** @enum {string} */
        OrderStatus: "QUEUED" | "UNPAID" | "PAID" | "CANCELED";
        /** @description What a buyer sees of an order. */
        OrderView: {
            /** Format: date-time */
            created_at: string;
            /** @description ISO 4217 (`flash_sale.currency`). */
            currency: string;
            id: string;
            /** @description A payment arrived after the cancel: it is to be refunded, the order stays canceled. */
            paid_after_cancel: boolean;
            /**
             * Format: date-time
             * @description Pay before this, or the order is canceled and its unit goes back.
             */
            pay_by: string;
            payment_ref?: string | null;
            /**
             * Format: int64
             * @description In the minor unit of `currency`.
             */
            price: number;
            sale_id: string;
            status: components["schemas"]["OrderStatus"];
            /** Format: date-time */
            updated_at: string;
        };
        /** @description An organisation with its members and the plan they share. */
        OrgView: {
            /** Format: date-time */
            created_at: string;
            id: string;
            members: components["schemas"]["MemberView"][];
            name: string;
            owner_id: string;
            /** @description The plan its members have now (a member whose own plan weighs more keeps theirs). */
            plan: string;
            /** @description The plan an admin set on it (`null`: the owner's own plan applies). */
            plan_set?: string | null;
        };
        /** @description The limits an admin set for one user, by key (0 turns one off); a limit not named follows the plan and `[limits]`. */
        Overrides: {
            material_writes_per_min?: number;
            open_payments?: number;
            order_burst?: number;
            orders_per_sec?: number;
            payments_per_min?: number;
            streams_per_user?: number;
            submit_burst?: number;
            submits_per_sec?: number;
            tasks_in_flight?: number;
            tasks_running?: number;
            tickets_per_min?: number;
            uploads_concurrent?: number;
            webhook_sends_per_min?: number;
        };
        /** @description Newest first; pass `next_cursor` as `cursor` for the next page (null: no more). */
        Page_DeadLetterView: {
            items: {
                actions?: components["schemas"]["ActionView"][] | null;
                /** Format: int32 */
                attempts: number;
                body?: unknown;
                /** @description What the message was about (a task, order, payment, material or delivery id). */
                business_id?: string | null;
                /** @description The consumer instance that handled it last. */
                consumer?: string | null;
                /** Format: date-time */
                created_at: string;
                history: unknown;
                /** Format: int64 */
                id: number;
                kind: string;
                last_error: string;
                message_id: string;
                queue: string;
                reason: string;
                status: string;
                /** @description The distributed trace the message was sent in (when the sender exported traces). */
                trace_id?: string | null;
                /** Format: date-time */
                updated_at: string;
            }[];
            next_cursor?: string | null;
        };
        /** @description Newest first; pass `next_cursor` as `cursor` for the next page (null: no more). */
        Page_DeliveryView: {
            items: {
                /** Format: int32 */
                attempts: number;
                /** Format: date-time */
                created_at: string;
                /** Format: date-time */
                delivered_at?: string | null;
                /** @description The event's id: every delivery's `webhook-id`, retries included. */
                event_id: string;
                event_type: string;
                id: string;
                /** @description Why the last attempt got no answer (a timeout, a refused connection). */
                last_error?: string | null;
                /** Format: int32 */
                last_latency_ms?: number | null;
                last_response?: string | null;
                /**
                 * Format: int32
                 * @description The last answer's status code, first bytes and time.
                 */
                last_status?: number | null;
                /** @description Every attempt, in order (when one delivery is read). */
                log?: components["schemas"]["AttemptView"][] | null;
                /** Format: date-time */
                next_attempt_at?: string | null;
                /**
                 * @description `PENDING` (being attempted), `SUCCEEDED` (answered 2xx) or `FAILED` (given up, or
                 *     its endpoint was disabled or deleted).
                 */
                status: components["schemas"]["DeliveryStatus"];
            }[];
            next_cursor?: string | null;
        };
        /** @description Newest first; pass `next_cursor` as `cursor` for the next page (null: no more). */
        Page_LedgerEntry: {
            items: {
                /** Format: date-time */
                at: string;
                /** Format: int64 */
                delta: number;
                /**
                 * @description What caused it (`payment:<id>`, `reserve:<task>`, …); unique: an effect is booked
                 *     once.
                 */
                effect: string;
                /** Format: int64 */
                id: number;
                /** @description `grant`, `reserve`, `consume`, `refund`, `take_back`, `membership`, … */
                reason: string;
            }[];
            next_cursor?: string | null;
        };
        /** @description Newest first; pass `next_cursor` as `cursor` for the next page (null: no more). */
        Page_MaterialView: {
            items: {
                /** @description Text for text kinds; JSON (URL and metadata) for media. */
                content: string;
                /** Format: date-time */
                created_at: string;
                /**
                 * @description Its files (images, posters, models) with download URLs that expire; filled by
                 *     `GET /v1/materials/{id}`, absent from lists.
                 */
                files?: components["schemas"]["FileView"][];
                id: string;
                kind: string;
                tags: string[];
                task_id: string;
                title: string;
                /** Format: date-time */
                updated_at?: string | null;
                /**
                 * Format: int64
                 * @description Incremented by every change.
                 */
                version: number;
            }[];
            next_cursor?: string | null;
        };
        /** @description Newest first; pass `next_cursor` as `cursor` for the next page (null: no more). */
        Page_OrderView: {
            items: {
                /** Format: date-time */
                created_at: string;
                /** @description ISO 4217 (`flash_sale.currency`). */
                currency: string;
                id: string;
                /** @description A payment arrived after the cancel: it is to be refunded, the order stays canceled. */
                paid_after_cancel: boolean;
                /**
                 * Format: date-time
                 * @description Pay before this, or the order is canceled and its unit goes back.
                 */
                pay_by: string;
                payment_ref?: string | null;
                /**
                 * Format: int64
                 * @description In the minor unit of `currency`.
                 */
                price: number;
                sale_id: string;
                status: components["schemas"]["OrderStatus"];
                /** Format: date-time */
                updated_at: string;
            }[];
            next_cursor?: string | null;
        };
        /** @description Newest first; pass `next_cursor` as `cursor` for the next page (null: no more). */
        Page_SaleView: {
            items: {
                /** Format: date-time */
                created_at: string;
                /** @description ISO 4217 (`flash_sale.currency`). */
                currency: string;
                /** Format: date-time */
                ends_at: string;
                id: string;
                item: string;
                /** Format: int32 */
                per_user_limit: number;
                /**
                 * Format: int64
                 * @description In the minor unit of `currency`.
                 */
                price: number;
                /**
                 * Format: int64
                 * @description Units left to take (from the stock store; stock − held orders when it is cold).
                 */
                remaining: number;
                /** Format: date-time */
                starts_at: string;
                state: components["schemas"]["SaleState"];
                /** Format: int32 */
                stock: number;
            }[];
            next_cursor?: string | null;
        };
        /** @description Newest first; pass `next_cursor` as `cursor` for the next page (null: no more). */
        Page_TaskView: {
            items: {
                /** Format: int32 */
                attempts: number;
                /** Format: int64 */
                cost: number;
                /** Format: date-time */
                created_at: string;
                error?: string | null;
                /**
                 * @description The files it generated, with download URLs that expire; filled by
                 *     `GET /v1/tasks/{id}`, absent elsewhere.
                 */
                files?: components["schemas"]["FileView"][];
                /** Format: date-time */
                finished_at?: string | null;
                id: string;
                kind: components["schemas"]["TaskKind"];
                line?: components["schemas"]["PlaceView"] | null;
                /** @description The client's metadata, as submitted. */
                metadata?: Record<string, unknown> | null;
                /** @description The plan it was submitted under: its weight in a contended lane. */
                plan: string;
                /** Format: int32 */
                progress: number;
                prompt: string;
                result?: unknown;
                /** @description The task this one retries (`POST /v1/tasks/{id}/retry`). */
                retry_of?: string | null;
                /** Format: date-time */
                started_at?: string | null;
                status: components["schemas"]["TaskStatus"];
                step?: string | null;
                /**
                 * @description The distributed trace of its run (when the server exports traces): look it up in
                 *     the trace backend for where its time went.
                 */
                trace_id?: string | null;
                /** Format: date-time */
                updated_at: string;
                waiting?: components["schemas"]["WaitingView"] | null;
            }[];
            next_cursor?: string | null;
        };
        /** @description Newest first; pass `next_cursor` as `cursor` for the next page (null: no more). */
        Page_TenantTask: {
            items: (components["schemas"]["TaskView"] & {
                /** @description The tenant (user id) the task belongs to. */
                user_id: string;
            })[];
            next_cursor?: string | null;
        };
        /** @description Newest first; pass `next_cursor` as `cursor` for the next page (null: no more). */
        Page_UploadView: {
            items: {
                /** @description Sniffed from the bytes (declared, for a presigned upload not yet completed). */
                content_type?: string | null;
                /** Format: date-time */
                created_at: string;
                /**
                 * Format: int64
                 * @description A video's length in milliseconds, once something read it (a video analysis
                 *     submitted on it probes it once).
                 */
                duration_ms?: number | null;
                id: string;
                /** @description `video`, `image` or `audio`. */
                purpose: string;
                reason?: string | null;
                /**
                 * @description Hex SHA-256 of the bytes (for a presigned upload not yet completed: the one its
                 *     client declared, if any).
                 */
                sha256?: string | null;
                /**
                 * Format: int64
                 * @description Bytes stored (0 until READY).
                 */
                size: number;
                /** @description `PENDING` (bytes on their way), `READY`, `REJECTED` (see `reason`). */
                status: components["schemas"]["ObjectStatus"];
                /** @description A signed download URL (READY only); relative on the embedded store. */
                url?: string | null;
                /** Format: date-time */
                url_expires_at?: string | null;
            }[];
            next_cursor?: string | null;
        };
        PanelView: {
            source: string;
            tables: components["schemas"]["TableView"][];
            title: string;
        };
        /** @description What an owner may change; at least one field. */
        PatchEndpoint: {
            description?: string | null;
            /** @description `true` enables it again after it was disabled (by its owner or for failing). */
            enabled?: boolean | null;
            event_types?: string[] | null;
            url?: string | null;
        };
        /** @description What an owner may change; at least one field. */
        PatchRequest: {
            /** @description At most 20 tags of 1 to 50 characters each; duplicates are dropped. */
            tags?: components["schemas"]["Tag"][];
            /** @description 1 to 200 characters, not blank. */
            title?: string;
        };
        /** @description What to pay for: exactly one of a configured product and an unpaid flash-sale order */
        PaymentRequest: {
            order?: null;
            /**
             * @description A product of `[payments.products]`
             * @enum {string}
             */
            product: "credits_100" | "credits_1000" | "member_monthly" | "member_yearly";
        } | {
            /** @description One of the caller's unpaid flash-sale orders; the payment is for its price */
            order: string;
            product?: null;
        };
        /**
         * @description A payment's state, stored as its name.
         * @enum {string}
         */
        PaymentStatus: "CREATED" | "EXPIRED" | "PAID" | "REFUNDED" | "REFUND_DUE";
        /** @description What a client needs to pay, provider-agnostic, and what became of it. */
        PaymentView: {
            /**
             * Format: int64
             * @description In the currency's minor unit.
             */
            amount: number;
            /** Format: date-time */
            created_at: string;
            /** Format: int64 */
            credits: number;
            currency: string;
            /** @description The provider events received for it, oldest first. */
            events: components["schemas"]["EventView"][];
            id: string;
            /**
             * Format: int32
             * @description Months of membership it buys.
             */
            membership_months: number;
            order_id?: string | null;
            /** @description Our order number at the provider (the payment id). */
            out_trade_no: string;
            /** Format: date-time */
            paid_at?: string | null;
            /** @description The product, or `order` for a flash-sale order. */
            product: string;
            /** Format: int64 */
            refunded_amount: number;
            /**
             * Format: int64
             * @description Credits a refund could not take back (spent already).
             */
            shortfall: number;
            /**
             * @description `CREATED`, `PAID`, `REFUNDED`, `REFUND_DUE` (the order was canceled first) or
             *     `EXPIRED` (unpaid after `payments.intent_ttl_secs`; a payment that still arrives is
             *     granted).
             */
            status: components["schemas"]["PaymentStatus"];
        };
        /** @description One ping. */
        PingView: {
            id: string;
            /** Format: int64 */
            latency_ms?: number | null;
            /**
             * Format: date-time
             * @description Absent while it is on its way (or lost).
             */
            received_at?: string | null;
            /** Format: date-time */
            sent_at: string;
        };
        /** @description Where a PENDING task stands. */
        PlaceView: {
            /**
             * Format: date-time
             * @description When it should start: `position + 1` tasks at the pace its tenant's work in the
             *     lane started over the last minute (the lane's, if the tenant's has not started
             *     twice); `null` when nothing started there lately.
             */
            estimated_start_at?: string | null;
            /** Format: int64 */
            estimated_wait_ms?: number | null;
            /** @description The line it waits in (the queue of its first step). */
            lane: string;
            /**
             * Format: int64
             * @description Tasks of its tenant in the lane submitted before it and not started: it starts
             *     after them (0: it is next).
             */
            position: number;
            /**
             * Format: int64
             * @description Tasks of every tenant waiting ahead of it in the lane (the fair share serves
             *     tenants side by side, so it may start before many of them).
             */
            waiting_ahead: number;
        };
        PlanChoice: {
            /**
             * @description A configured plan; `null` clears the choice (the plan follows memberships again).
             * @enum {string|null}
             */
            plan?: "free" | "member" | null;
        };
        PlanView: {
            /** @description The task kinds it may submit; empty: every kind. */
            kinds: string[];
            name: string;
            org_id?: string | null;
            /**
             * @description Whose limits and share the caller's work counts against: the organisation, else
             *     the caller.
             */
            tenant_id: string;
            /**
             * Format: int32
             * @description Its share of a contended lane against other plans'.
             */
            weight: number;
            /** @description `default` (free), `membership`, `admin` (set on the user) or `organisation`. */
            why: components["schemas"]["Why"];
        };
        Point: {
            /** Format: date-time */
            at: string;
            /** Format: double */
            consumed_per_sec: number;
            /** Format: int64 */
            dead: number;
            /** Format: double */
            published_per_sec: number;
            /** Format: int64 */
            ready: number;
            /** Format: int64 */
            retrying: number;
        };
        PresignRequest: {
            /**
             * @description The file's content type, one the purpose accepts (checked against the bytes at
             *     completion).
             */
            content_type: string;
            /** @description `video`, `image` or `audio`. */
            purpose: string;
            /**
             * @description Hex SHA-256 of the file, optional: when given, the PUT must send it (the
             *     `x-amz-checksum-sha256` of `headers`; stores that check it refuse other bytes) and
             *     completion refuses other bytes (`checksum_mismatch`).
             */
            sha256?: string | null;
            /**
             * Format: int64
             * @description The file's exact size in bytes: the PUT's `Content-Length` must be this (signed
             *     into the URL), and completion checks it.
             */
            size: number;
        };
        Presigned: {
            /** Format: date-time */
            expires_at: string;
            /**
             * @description Headers the `PUT` must carry, exactly (they are signed into the URL):
             *     `Content-Type`, and `x-amz-checksum-sha256` when `sha256` was declared. Its
             *     `Content-Length` must be the declared `size` (clients set it from the body).
             */
            headers: {
                [key: string]: string;
            };
            method: string;
            upload: components["schemas"]["UploadView"];
            /** @description `PUT` the bytes here, before `expires_at`, with `headers`, then call `complete`. */
            upload_url: string;
        };
        QueueRow: {
            /**
             * Format: int32
             * @description Their prefetch, summed: deliveries in flight at once.
             */
            concurrency: number;
            /** Format: double */
            consumed_per_sec: number;
            /**
             * Format: int32
             * @description Processes consuming it (that reported within the last three samples).
             */
            consumers: number;
            /**
             * Format: int64
             * @description Dead letters waiting for an operator (the database's count: the broker's DLQ holds
             *     copies of the same letters until the keeper drains it).
             */
            dead: number;
            /** Format: double */
            dead_per_sec: number;
            group: string;
            /**
             * Format: double
             * @description Age of the oldest work waiting for it, where its domain can tell.
             */
            oldest_age_secs?: number | null;
            /** Format: double */
            published_per_sec: number;
            queue: string;
            /**
             * Format: int64
             * @description Ready for a consumer.
             */
            ready: number;
            /**
             * Format: int64
             * @description Parked in a retry tier.
             */
            retrying: number;
        };
        /** @description One reconciliation of a sale. */
        Reconciled: {
            /**
             * Format: int64
             * @description stock − remaining − live orders: units taken with no order written (in flight,
             *     or lost between the script and the publish); negative means oversold.
             */
            drift?: number | null;
            /**
             * Format: int64
             * @description UNPAID + PAID orders.
             */
            live_orders: number;
            /**
             * Format: int64
             * @description Units left in the stock store; null when the sale is not loaded there.
             */
            remaining?: number | null;
            /** @description The stock store was set to stock − live orders. */
            repaired: boolean;
            sale_id: string;
            /** Format: int64 */
            stock: number;
        };
        /** @description Which dead letters a replay by filter takes. */
        ReplayFilter: {
            /** @description Count only; send nothing. */
            dry_run?: boolean;
            /** @description Also the letters parked as `needs_fix`. */
            force?: boolean;
            /**
             * Format: int32
             * @description At most this many replays in this call (1 to 100, default 20), oldest first, at
             *     `dead_letters.replay_per_second`; call again while `remaining` > 0.
             */
            limit?: number | null;
            /** @description A queue key (`ai.short`, …). */
            queue: string;
            /** @description Only this reason. */
            reason?: string | null;
        };
        ReplayFilterView: {
            /** @description Letters the filter matches (before this call). */
            matched: number;
            /** @description Of the queue's letters, those parked as `needs_fix` (included only with `force`). */
            parked: number;
            /** @description Still to replay after this call. */
            remaining: number;
            /** @description Replayed by this call. */
            replayed: number[];
        };
        /** @description A rotation: the new key, and the old one with the end of its overlap. */
        RotatedView: {
            key: string;
            new: components["schemas"]["KeyInfo"];
            old: components["schemas"]["KeyInfo"];
        };
        SaleRequest: {
            /**
             * Format: date-time
             * @description After `starts_at`.
             */
            ends_at: string;
            /** @description What is sold (1 to 200 characters). */
            item: string;
            /**
             * Format: int32
             * @description Units one buyer may hold (1 or more); with 1 the database also holds every buyer
             *     to one order.
             */
            per_user_limit: number;
            /**
             * Format: int64
             * @description Price of one unit in the minor unit of `flash_sale.currency` (fen for CNY): what a
             *     payment for the order bills. At least 1: an order at 0 could never be paid and
             *     would be canceled at its deadline.
             */
            price: number;
            /** Format: date-time */
            starts_at: string;
            /**
             * Format: int32
             * @description Units for sale (1 to 1,000,000).
             */
            stock: number;
        };
        /**
         * @description Where a sale stands.
         * @enum {string}
         */
        SaleState: "upcoming" | "active" | "sold_out" | "ended";
        /** @description What clients see of a sale. */
        SaleView: {
            /** Format: date-time */
            created_at: string;
            /** @description ISO 4217 (`flash_sale.currency`). */
            currency: string;
            /** Format: date-time */
            ends_at: string;
            id: string;
            item: string;
            /** Format: int32 */
            per_user_limit: number;
            /**
             * Format: int64
             * @description In the minor unit of `currency`.
             */
            price: number;
            /**
             * Format: int64
             * @description Units left to take (from the stock store; stock − held orders when it is cold).
             */
            remaining: number;
            /** Format: date-time */
            starts_at: string;
            state: components["schemas"]["SaleState"];
            /** Format: int32 */
            stock: number;
        };
        /** @description One search result. */
        SearchHit: {
            /** Format: date-time */
            created_at: string;
            /**
             * @description A fragment of the content, HTML-escaped, with the matched words in `<em>…</em>`
             *     (empty in a search by meaning).
             */
            highlight: string;
            id: string;
            kind: string;
            /**
             * Format: float
             * @description A search by meaning: how close the material is to the query (cosine, up to 1).
             */
            score?: number | null;
            tags: string[];
            title: string;
            /** Format: int64 */
            version: number;
        };
        SearchPage: {
            items: components["schemas"]["SearchHit"][];
            next_cursor?: string | null;
            /**
             * Format: int64
             * @description How many materials match.
             */
            total: number;
        };
        /** @description Everything the console shows, as of `at`. */
        Snapshot: {
            alerts: components["schemas"]["AlertsView"];
            /** Format: date-time */
            at: string;
            dead_letters: components["schemas"]["DeadLetterSummary"];
            panels: components["schemas"]["PanelView"][];
            queues: components["schemas"]["QueueRow"][];
            /** @description Per queue key, the points of the last `ops.history_secs`, oldest first. */
            series: {
                [key: string]: components["schemas"]["Point"][];
            };
        };
        /** @description One Server-Sent Event as a client parses it (documentation only). */
        SseFrame: {
            /** @description JSON: the snapshot's view, or the event's fields. */
            data: string;
            /**
             * @description `snapshot` (the thing as it stands), `progress` (one stored event), `line` (a
             *     waiting task's place in line, computed: no `id`) or `end` (the last: the thing is
             *     final, do not reconnect).
             */
            event: string;
            /**
             * @description The event's sequence number (resume with `Last-Event-ID`); none on computed
             *     `line` events and on `end`.
             */
            id?: string | null;
        };
        StorageUse: {
            /** Format: int64 */
            quota_bytes: number;
            /** Format: int64 */
            used_bytes: number;
        };
        SubmitRequest: {
            kind: components["schemas"]["TaskKind"];
            /**
             * @description The client's own labels: a flat object of at most 16 string values (keys of 1 to
             *     40 letters, digits, `_`, `-`, `.`; values of at most 200 characters), returned in
             *     the task's view and webhook bodies; tasks are found by them
             *     (`GET /v1/tasks?metadata=campaign:42`).
             */
            metadata?: {
                [key: string]: string;
            } | null;
            /**
             * @description A JSON object of at most `ai.max_params_bytes` bytes (16 KiB by default), passed
             *     to the provider.
             */
            params?: Record<string, unknown> | null;
            /** @description Not blank; at most `ai.max_prompt_chars` characters (4000 by default). */
            prompt: string;
        };
        /** @description A table of cells (strings or numbers), drawn as it comes. */
        TableView: {
            columns: string[];
            /** @description Cells: strings or numbers. */
            rows: unknown[][];
            title: string;
        };
        /** @description 1 to 50 characters, not blank */
        Tag: string;
        /** @enum {string} */
        TaskKind: "copywriting" | "image" | "video" | "model3d" | "video_analysis";
        /** @enum {string} */
        TaskStatus: "PENDING" | "PROCESSING" | "RETRYING" | "WAITING" | "SUCCESS" | "FAILED" | "CANCELED";
        /** @description What clients see of a task. */
        TaskView: {
            /** Format: int32 */
            attempts: number;
            /** Format: int64 */
            cost: number;
            /** Format: date-time */
            created_at: string;
            error?: string | null;
            /**
             * @description The files it generated, with download URLs that expire; filled by
             *     `GET /v1/tasks/{id}`, absent elsewhere.
             */
            files?: components["schemas"]["FileView"][];
            /** Format: date-time */
            finished_at?: string | null;
            id: string;
            kind: components["schemas"]["TaskKind"];
            line?: components["schemas"]["PlaceView"] | null;
            /** @description The client's metadata, as submitted. */
            metadata?: Record<string, unknown> | null;
            /** @description The plan it was submitted under: its weight in a contended lane. */
            plan: string;
            /** Format: int32 */
            progress: number;
            prompt: string;
            result?: unknown;
            /** @description The task this one retries (`POST /v1/tasks/{id}/retry`). */
            retry_of?: string | null;
            /** Format: date-time */
            started_at?: string | null;
            status: components["schemas"]["TaskStatus"];
            step?: string | null;
            /**
             * @description The distributed trace of its run (when the server exports traces): look it up in
             *     the trace backend for where its time went.
             */
            trace_id?: string | null;
            /** Format: date-time */
            updated_at: string;
            waiting?: components["schemas"]["WaitingView"] | null;
        };
        /** @description A task as operators see it: the tenant's view, and whose it is. */
        TenantTask: components["schemas"]["TaskView"] & {
            /** @description The tenant (user id) the task belongs to. */
            user_id: string;
        };
        /** @description A test event on its way. */
        TestSent: {
            delivery_id: string;
            event_id: string;
        };
        /** @description A WebSocket ticket. */
        TicketView: {
            /** Format: int64 */
            expires_in_secs: number;
            /** @description `wst_…`: pass as `GET /v1/ws?ticket=…`; single use. */
            ticket: string;
        };
        /** @description The `multipart/form-data` body of an upload (documentation only: it is streamed). */
        UploadForm: {
            /**
             * Format: binary
             * @description The bytes. Their type is read from them, not from the file name or header.
             */
            file: string;
            /** @description `video`, `image` or `audio`; must come before `file`. At most 256 bytes. */
            purpose: string;
        };
        /** @description An upload: its status and, once READY, a download URL that expires. */
        UploadView: {
            /** @description Sniffed from the bytes (declared, for a presigned upload not yet completed). */
            content_type?: string | null;
            /** Format: date-time */
            created_at: string;
            /**
             * Format: int64
             * @description A video's length in milliseconds, once something read it (a video analysis
             *     submitted on it probes it once).
             */
            duration_ms?: number | null;
            id: string;
            /** @description `video`, `image` or `audio`. */
            purpose: string;
            reason?: string | null;
            /**
             * @description Hex SHA-256 of the bytes (for a presigned upload not yet completed: the one its
             *     client declared, if any).
             */
            sha256?: string | null;
            /**
             * Format: int64
             * @description Bytes stored (0 until READY).
             */
            size: number;
            /** @description `PENDING` (bytes on their way), `READY`, `REJECTED` (see `reason`). */
            status: components["schemas"]["ObjectStatus"];
            /** @description A signed download URL (READY only); relative on the embedded store. */
            url?: string | null;
            /** Format: date-time */
            url_expires_at?: string | null;
        };
        /** @description One kind served by one provider in the range. */
        UsageLine: {
            /**
             * Format: int64
             * @description Credits charged (on each task's last step).
             */
            credits: number;
            /** Format: int64 */
            images: number;
            /** Format: int64 */
            input_tokens: number;
            kind: string;
            /** Format: double */
            media_seconds: number;
            /** Format: int64 */
            output_tokens: number;
            /** @description The `[ai.providers]` name that served it. */
            provider: string;
            /**
             * Format: int64
             * @description Tasks with a step in the range.
             */
            tasks: number;
            /** Format: int64 */
            total_tokens: number;
        };
        UsageReport: {
            /**
             * Format: int64
             * @description The credits of every line.
             */
            credits: number;
            /** Format: date-time */
            from: string;
            items: components["schemas"]["UsageLine"][];
            /** Format: date-time */
            to: string;
        };
        /** @description A tenant's limits: configured, set by its plan, overridden, in effect (by key). */
        UserLimits: {
            configured: {
                [key: string]: number;
            };
            effective: {
                [key: string]: number;
            };
            overrides: components["schemas"]["Overrides"];
            /** @description The plan that applies. */
            plan: string;
            /** @description What the plan sets otherwise. */
            plan_limits: {
                [key: string]: number;
            };
            /** @description Whose limits these are: the organisation, else the user. */
            tenant_id: string;
        };
        /** @description Letters waiting for an operator (`dead`, `needs_fix`) of one queue and reason. */
        Waiting: {
            /** Format: int64 */
            count: number;
            queue: string;
            reason: string;
        };
        /** @description What a `WAITING` task waits for. */
        WaitingView: {
            /**
             * @description The one-time link that decides an approval (`POST` it with `{"decision"}`): hand
             *     it to a reviewer. Only the task's owner and admins see it.
             */
            approval_link?: string | null;
            /**
             * Format: date-time
             * @description When the wait gives up: the job is canceled and the task fails, or the approval
             *     is rejected.
             */
            deadline_at: string;
            /** @description `provider` (its job runs there) or `approval` (a person's decision). */
            for: string;
            /** @description The `[ai.providers]` name running the job. */
            provider?: string | null;
            /** Format: date-time */
            since: string;
        };
        /**
         * @description Why a plan applies.
         * @enum {string}
         */
        Why: "default" | "membership" | "admin" | "organisation";
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    client_js: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description `@conveyor/client` as one script (`window.Conveyor`), for the pages conveyor serves */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/javascript": string;
                };
            };
        };
    };
    demo: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page that submits a task and draws its progress from the WebSocket */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/html": string;
                };
            };
        };
    };
    healthz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The process is up: `{"status":"ok"}` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, unknown>;
                };
            };
        };
    };
    metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Prometheus text format */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description `server.ops_token` is set and the request does not bear it */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    page: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The operations console (HTML; signs in with an admin API key) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/html": unknown;
                };
            };
        };
    };
    readyz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Every required dependency answered: `{"status":"ready","checks":{"database":"ok",…}}` (`degraded` when an optional one did not); with the operators' token also `broker_nodes`: the node (`host:port`) each live broker connection uses */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, unknown>;
                };
            };
            /** @description Not ready; `checks` names the failed dependency */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, unknown>;
                };
            };
        };
    };
    list_alerts: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Alerts firing now, and the latest 50 episodes newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AlertsView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    show_canary: {
        parameters: {
            query?: {
                /** @description How many of the newest pings to list: 1 to 100 (default 20). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The canary's state */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CanaryView"];
                };
            };
            /** @description Bad query */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_dead_letters: {
        parameters: {
            query?: {
                /** @description A queue key (`ai.short`, …). */
                queue?: string;
                status?: components["schemas"]["DeadLetterStatus"];
                /** @description malformed, permanent, exhausted or crash_loop. */
                reason?: string;
                /** @description The message kind (`ai.task.run`, …). */
                kind?: string;
                /**
                 * @description What the message was about: a task, order, payment, material or webhook delivery
                 *     id (indexed).
                 */
                business_id?: string;
                /** @description Only letters that died (last) at or after this time (RFC 3339). */
                since?: string;
                /** @description `next_cursor` of the previous page. */
                cursor?: string;
                /** @description Page size, 1 to 100 (default 20). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Dead letters, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Page_DeadLetterView"];
                };
            };
            /** @description Bad filter, limit or cursor (named in `field`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    replay_dead_letters_by_filter: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ReplayFilter"];
            };
        };
        responses: {
            /** @description What the filter matches, what this call replayed and what remains */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReplayFilterView"];
                };
            };
            /** @description Bad queue or limit (named in `field`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description An unknown field or a value of the wrong type (named in `field`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    show_dead_letter: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Dead letter id */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The dead letter with its body (the envelope as it died) and audit trail */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeadLetterView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such dead letter */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    discard_dead_letter: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Dead letter id */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Marked dropped on purpose, or `already` discarded */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OperatedView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such dead letter */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Already replayed */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    replay_dead_letter: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Dead letter id */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Sent back to its origin queue (same message id, fresh attempts), or `already` replayed */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OperatedView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such dead letter */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Discarded, or malformed (not replayable) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Above `dead_letters.replay_per_second`; see `Retry-After` */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_flash_sales: {
        parameters: {
            query?: {
                /** @description `next_cursor` of the previous page. */
                cursor?: string;
                /** @description 1 to 100 (default 20). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Sales, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Page_SaleView"];
                };
            };
            /** @description Bad query */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_flash_sale: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SaleRequest"];
            };
        };
        responses: {
            /** @description The sale */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SaleView"];
                };
            };
            /** @description Malformed JSON or unknown fields */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Invalid field (named in `field`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    reconcile: {
        parameters: {
            query: {
                /** @description Set the stock store's units left to stock − live orders (only on a quiet sale). */
                repair: boolean;
            };
            header?: never;
            path: {
                /** @description Sale id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The figures and the drift */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Reconciled"];
                };
            };
            /** @description `repair` is not `true` or `false` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such sale */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    ops_snapshot: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Queues, rates, history, the domains' panels, dead letters and alerts as of the latest sample */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Snapshot"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No sample taken yet (the server just started) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    ops_stream: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Server-Sent Events: a `snapshot` event (the body of `GET /v1/admin/ops`) at each sample */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": components["schemas"]["OpsFrame"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    mark_paid: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Order id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["MarkPaidRequest"];
            };
        };
        responses: {
            /** @description UNPAID → PAID, or what happened instead */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MarkPaidView"];
                };
            };
            /** @description No JSON body, or malformed JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such order */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Invalid payment_ref */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_org: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewOrg"];
            };
        };
        responses: {
            /** @description The organisation, its owner its first member */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrgView"];
                };
            };
            /** @description The body could not be read: not JSON (`malformed_json`), not `Content-Type: application/json` (`unsupported_media_type`), or a form that is not one (`invalid_multipart`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such user (the owner) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `in_another_org`: the owner belongs to another */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A blank or too long name */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Organisation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The organisation and its members */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrgView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such organisation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    admin_add: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Organisation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewMember"];
            };
        };
        responses: {
            /** @description The organisation with the member added, at once: an operator's act, without an invitation (audited as `org.add_member`) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrgView"];
                };
            };
            /** @description The body could not be read: not JSON (`malformed_json`), not `Content-Type: application/json` (`unsupported_media_type`), or a form that is not one (`invalid_multipart`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such organisation or user */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `in_another_org` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is JSON but not what this operation takes (`invalid_field`: an unknown field, a missing one, a wrong type) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    admin_remove: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Organisation id */
                id: string;
                /** @description The member */
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The organisation without the member */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrgView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such organisation or member */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `owner_cannot_leave` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    set_plan: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Organisation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PlanChoice"];
            };
        };
        responses: {
            /** @description The organisation with its plan now (audited as `plan.set`) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrgView"];
                };
            };
            /** @description The body could not be read: not JSON (`malformed_json`), not `Content-Type: application/json` (`unsupported_media_type`), or a form that is not one (`invalid_multipart`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such organisation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description An unknown plan */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    set_queue_concurrency: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description A queue key (`ai.short`, …) */
                queue: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["Concurrency"];
            };
        };
        responses: {
            /** @description Stored and audited; every consumer process of the queue follows within `consumer.settings_poll_ms` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Concurrency"];
                };
            };
            /** @description Prefetch out of range (named in `field`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such queue */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description An unknown field or a value of the wrong type (named in `field`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    find_tasks: {
        parameters: {
            query?: {
                /** @description Only tasks in this status (case-insensitive). */
                status?: components["schemas"]["TaskStatus"];
                /** @description Only tasks of this kind. */
                kind?: components["schemas"]["TaskKind"];
                /** @description Only tasks created at or after this time (RFC 3339). */
                since?: string;
                /** @description Only tasks created before this time (RFC 3339). */
                until?: string;
                /**
                 * @description Only tasks submitted with this metadata: `key:value` (the first `:` splits; a key
                 *     of 1 to 40 letters, digits, `_`, `-` or `.`, a value of at most 200 characters).
                 */
                metadata?: string;
                /** @description Admins only: one tenant's tasks. */
                user_id?: string;
                /** @description `next_cursor` of the previous page (a task id). */
                cursor?: string;
                /** @description Page size, 1 to 100 (default 20). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Every tenant's tasks matching the filter, newest first, with their tenant */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Page_TenantTask"];
                };
            };
            /** @description A bad filter, limit or cursor (named in `field`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    bulk_tasks: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BulkRequest"];
            };
        };
        responses: {
            /** @description What the filter matched and what this call did */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BulkAnswer"];
                };
            };
            /** @description Not JSON, unknown fields, or a bad filter (named in `field`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description An unknown action or a bad limit (named in `field`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_keys: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description User id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The user's keys (never the keys themselves) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["KeyInfo"][];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such user */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_key: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description User id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A new key (shown once) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NewKeyView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such user */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    revoke_key: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description User id */
                id: string;
                /** @description Key id */
                key_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Revoked, on every instance within a second; its WebSocket and SSE streams close */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["KeyInfo"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such key of this user */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    rotate_key: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description User id */
                id: string;
                /** @description Key id */
                key_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A new key; the old one works for `auth.key_rotation_overlap_secs` more */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RotatedView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such live key of this user */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_limits: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description User id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The user's limits */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UserLimits"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such user */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    set_limits: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description User id */
                id: string;
            };
            cookie?: never;
        };
        /** @description The overridden limits only (0 turns one off); absent ones follow the plan and `[limits]`. Replaces earlier overrides. A member of an organisation shares the organisation's: they are set for it. */
        requestBody: {
            content: {
                "application/json": components["schemas"]["Overrides"];
            };
        };
        responses: {
            /** @description The user's limits now (other instances apply them within 5 s) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UserLimits"];
                };
            };
            /** @description Not JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such user */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description An unknown limit or a value that is not a non-negative integer */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    set_user_plan: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description User id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PlanChoice"];
            };
        };
        responses: {
            /** @description The user's limits under the plan now (audited as `plan.set`) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UserLimits"];
                };
            };
            /** @description The body could not be read: not JSON (`malformed_json`), not `Content-Type: application/json` (`unsupported_media_type`), or a form that is not one (`invalid_multipart`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not an admin */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such user */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description An unknown plan */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    decide_by_link: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The approval link's token, as the waiting task shows it */
                token: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DecisionRequest"];
            };
        };
        responses: {
            /** @description Decided */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskView"];
                };
            };
            /** @description The body could not be read: not JSON (`malformed_json`), not `Content-Type: application/json` (`unsupported_media_type`), or a form that is not one (`invalid_multipart`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No approval waits on this link (decided, expired, or never) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not a decision, or a comment too long */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    callback: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The `[ai.providers]` name */
                provider: string;
                /** @description The job's callback token, as its URL was given */
                token: string;
            };
            cookie?: never;
        };
        /** @description The provider's callback body (not trusted: the check reads the job itself) */
        requestBody: {
            content: {
                "text/plain": string;
            };
        };
        responses: {
            /** @description The job's check was woken */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The body could not be read: not JSON (`malformed_json`), not `Content-Type: application/json` (`unsupported_media_type`), or a form that is not one (`invalid_multipart`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The provider's signature is missing or wrong */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No waiting job has this token */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is JSON but not what this operation takes (`invalid_field`: an unknown field, a missing one, a wrong type) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    download: {
        parameters: {
            query: {
                /** @description Expiry, Unix seconds. */
                exp: number;
                /** @description Hex HMAC-SHA256 of the key and `exp`. */
                sig: string;
            };
            header?: never;
            path: {
                /** @description The file's key, as in its URL */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The file */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The byte range asked for */
            206: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Not modified (If-None-Match) */
            304: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The query string could not be read (`invalid_query`: an unknown or malformed parameter) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Expired URL, or a signature that does not match the key */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such file (or it was deleted) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The range starts past the end */
            416: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    show_flash_sale: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Sale id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The sale */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SaleView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such sale */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    order: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 128 visible ASCII characters: a repeat names the same order and takes no second unit */
                "Idempotency-Key"?: string | null;
            };
            path: {
                /** @description Sale id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A unit is yours; the order is QUEUED (`Location` names it) */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Accepted"];
                };
            };
            /** @description A malformed `Idempotency-Key` (named in `field`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such sale */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `sold_out`, `limit_reached` or `not_active` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `rate_limited`: orders per second of this account (`Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The broker or the stock store is away; nothing was taken (`Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_materials: {
        parameters: {
            query?: {
                /** @description `next_cursor` of the previous page. */
                cursor?: string;
                /** @description Page size, 1 to 100 (default 20). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The caller's materials, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Page_MaterialView"];
                };
            };
            /** @description Bad limit or cursor (named in `field`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    find: {
        parameters: {
            query?: {
                /**
                 * @description Words to find in title, content and tags (all of them); empty lists everything.
                 *     Words only: field queries (`name:value`), wildcards (`*`) and ranges are 400.
                 */
                q?: string;
                /**
                 * @description Search by meaning instead of words: materials ranked by how close their content
                 *     (a video's summary, knowledge entry and transcript) is to this text, best first,
                 *     each with its `score`. Not together with `q`.
                 */
                semantic?: string;
                /**
                 * @description With `semantic`: the least score (cosine, -1 to 1) listed; `search.semantic_min_score`
                 *     by default.
                 */
                min_score?: number;
                /** @description Only materials of this kind (a task kind: `copywriting`, `image`, …). */
                kind?: string;
                /** @description `next_cursor` of the previous page. */
                cursor?: string;
                /** @description Page size, 1 to 100 (default 20). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Matches among the caller's materials */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SearchPage"];
                };
            };
            /** @description Bad query, kind, cursor or limit (named in `field`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The search backend (or, for `semantic`, the embeddings provider) is unavailable; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    show_material: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Material id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The material */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MaterialView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such material of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_material: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Material id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such material of the caller's (or already deleted) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `rate_limited`: material edits and deletes per minute of this account (`Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    edit_material: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Material id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PatchRequest"];
            };
        };
        responses: {
            /** @description The material after the change (a new version) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MaterialView"];
                };
            };
            /** @description Not JSON, or unknown fields */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such material of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A field out of bounds (named in `field`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `rate_limited`: material edits and deletes per minute of this account (`Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    me: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The caller: balance, membership, plan, limits and usage */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MeView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    my_invitations: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The caller's open invitations, newest first (at most 100) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvitationView"][];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    accept_invitation: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Invitation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The organisation joined (audited as `org.add_member`). Its plan applies unless the caller's own weighs more: a bought membership or an admin's choice of a heavier plan stays theirs */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrgView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such invitation of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `invitation_expired`, `invitation_revoked`, `invitation_answered`; `in_another_org` (leave it first) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    decline_invitation: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Invitation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The invitation, declined (audited as `org.invite_decline`) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvitationView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such invitation of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `invitation_expired`, `invitation_revoked`, `invitation_answered` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    ledger: {
        parameters: {
            query?: {
                /** @description `next_cursor` of the previous page. */
                cursor?: string;
                /** @description 1 to 100 (default 20). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The caller's ledger, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Page_LedgerEntry"];
                };
            };
            /** @description Bad cursor or limit */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    usage: {
        parameters: {
            query?: {
                /** @description Start (RFC 3339, inclusive); default 30 days before `to`. */
                from?: string;
                /** @description End (RFC 3339, exclusive); default now. */
                to?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The caller's provider usage and credits, by kind and provider */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UsageReport"];
                };
            };
            /** @description A bad time, `from` not before `to`, or a range over 400 days */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_orders: {
        parameters: {
            query?: {
                /** @description Only orders in this status (`UNPAID`, `PAID`, `CANCELED`). */
                status?: string;
                /** @description `next_cursor` of the previous page. */
                cursor?: string;
                /** @description 1 to 100 (default 20). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The caller's orders, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Page_OrderView"];
                };
            };
            /** @description Bad query */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    read_order: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Order id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The order */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrderView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such order of the caller's (a QUEUED order is not written yet) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    mine: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The caller's organisation, its plan and members */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrgView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The caller belongs to none */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    org_invitations: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The organisation's open invitations, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvitationView"][];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The caller does not own their organisation */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The caller belongs to none */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    revoke_invitation: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Invitation id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The invitation, revoked: it can no longer be accepted (audited as `org.invite_revoke`) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvitationView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The caller does not own their organisation */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The caller belongs to none, or no such invitation of their organisation */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `invitation_expired`, `invitation_revoked`, `invitation_answered`: it is no longer open */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    invite_member: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewMember"];
            };
        };
        responses: {
            /** @description An invitation, pending until the user accepts it (`POST /v1/me/invitations/{id}/accept`); the user is not a member before. An open invitation of the same user is answered again (audited as `org.invite`) */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvitationView"];
                };
            };
            /** @description The body could not be read: not JSON (`malformed_json`), not `Content-Type: application/json` (`unsupported_media_type`), or a form that is not one (`invalid_multipart`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The caller does not own their organisation */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The caller belongs to none, or no such user */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `already_member`; `too_many_invitations` (100 open at once) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is JSON but not what this operation takes (`invalid_field`: an unknown field, a missing one, a wrong type) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    owner_remove: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The member */
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The organisation without the member (audited); a member may remove themselves (leave) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrgView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The caller neither owns their organisation nor is the member */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such member */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `owner_cannot_leave` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_payment: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PaymentRequest"];
            };
        };
        responses: {
            /** @description The intent */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PaymentView"];
                };
            };
            /** @description Neither or both of product and order */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such order of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `order_not_payable`: the order is not UNPAID */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Unknown product */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `rate_limited` (intents per minute) or `too_many_open_payments` (`Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    show_payment: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Payment id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The payment and its events */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PaymentView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such payment of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    stream: {
        parameters: {
            query?: never;
            header?: {
                /** @description Resume after this sequence number */
                "Last-Event-ID"?: number;
            };
            path: {
                /** @description Stream kind, e.g. `task` */
                stream: string;
                /** @description The followed thing's id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Server-Sent Events: `snapshot`, then `progress` events (`id:` is the sequence number); after a terminal event an `end` event, and the stream ends */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": components["schemas"]["SseFrame"];
                };
            };
            /** @description `Last-Event-ID` is not a sequence number */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such stream kind, or no such thing of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `too_many_streams`: this account's open streams on this server */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_tasks: {
        parameters: {
            query?: {
                /** @description Only tasks in this status (case-insensitive). */
                status?: components["schemas"]["TaskStatus"];
                /** @description Only tasks of this kind. */
                kind?: components["schemas"]["TaskKind"];
                /** @description Only tasks created at or after this time (RFC 3339). */
                since?: string;
                /** @description Only tasks created before this time (RFC 3339). */
                until?: string;
                /**
                 * @description Only tasks submitted with this metadata: `key:value` (the first `:` splits; a key
                 *     of 1 to 40 letters, digits, `_`, `-` or `.`, a value of at most 200 characters).
                 */
                metadata?: string;
                /** @description Admins only: one tenant's tasks. */
                user_id?: string;
                /** @description `next_cursor` of the previous page (a task id). */
                cursor?: string;
                /** @description Page size, 1 to 100 (default 20). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The caller's tasks, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Page_TaskView"];
                };
            };
            /** @description Unknown status or kind, a bad time, metadata term, limit or cursor (named in `field`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    submit: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 128 visible ASCII characters. Same key and body: the same answer (kept at least 24 h); same key, other body: 422 */
                "Idempotency-Key"?: string | null;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SubmitRequest"];
            };
        };
        responses: {
            /** @description Accepted: PENDING, credits reserved; `Location` names the task */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskView"];
                };
            };
            /** @description Malformed JSON or unknown fields */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Insufficient credits (`needed`, `balance`) */
            402: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `plan_required`: the caller's plan (`plan`) does not include the kind; `plans` name those that do */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Invalid field (named in `field`), or `idempotency_key_reused` (the key came with another body) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `rate_limited` (submissions per second) or `too_many_tasks_in_flight`; `Retry-After` says when */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    show_task: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Task id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The task (status, progress, step, attempts, result or error) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such task of the caller's (admins see every task) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    decide: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Task id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DecisionRequest"];
            };
        };
        responses: {
            /** @description Decided: PROCESSING (the step runs) or CANCELED (refunded per the cancel policy) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskView"];
                };
            };
            /** @description The body could not be read: not JSON (`malformed_json`), not `Content-Type: application/json` (`unsupported_media_type`), or a form that is not one (`invalid_multipart`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such task of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The task waits for no approval */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not a decision, or a comment too long */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    cancel: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Task id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description CANCELED, credits refunded; a running task stops at its next checkpoint */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such task of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Already terminal */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    task_stream: {
        parameters: {
            query?: never;
            header?: {
                /** @description Resume after this sequence number */
                "Last-Event-ID"?: number;
            };
            path: {
                /** @description Task id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Server-Sent Events of one task (the `task` stream) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": components["schemas"]["SseFrame"];
                };
            };
            /** @description `Last-Event-ID` is not a sequence number */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such task of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `too_many_streams`: this account's open streams on this server */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    retry_task: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The task to retry */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Retried before: that retry (a double click makes one) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskView"];
                };
            };
            /** @description A new task: PENDING, credits reserved again, starting at the step that failed with the earlier steps' outputs (`retry_of` names this task) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Insufficient credits (`needed`, `balance`) */
            402: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `plan_required`: the caller's plan no longer includes the kind */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such task of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `not_retryable`: only a FAILED task, or one CANCELED before it started, is retried */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `rate_limited` or `too_many_tasks_in_flight`; `Retry-After` says when */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_uploads: {
        parameters: {
            query?: {
                /** @description `next_cursor` of the previous page. */
                cursor?: string;
                /** @description Page size, 1 to 100 (default 20). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The caller's uploads, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Page_UploadView"];
                };
            };
            /** @description Bad limit or cursor (named in `field`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_upload: {
        parameters: {
            query?: {
                /**
                 * @description `video`, `image` or `audio`: here, the limit and the quota are checked before the
                 *     body is read (a refusal costs the client nothing); or as the form's first field.
                 */
                purpose?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "multipart/form-data": components["schemas"]["UploadForm"];
            };
        };
        responses: {
            /** @description Stored: READY, with size, sniffed type, SHA-256 and a signed URL */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UploadView"];
                };
            };
            /** @description Malformed multipart body, or fields out of order */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `form_timeout`: the form before the file's bytes (`purpose`, the parts' headers) did not arrive within `server.header_read_timeout_ms` */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `file_too_large` (the purpose's limit), `storage_quota` (the tenant's quota), `field_too_large` (a field other than `file` over 256 bytes, named in `field`) or `form_too_large` (the form before the file over 32 KiB); nothing stored */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unsupported_media_type` (the bytes are not a type the purpose takes: the upload is REJECTED), `empty_file`, or a bad `purpose` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `too_many_uploads`: the tenant has `limits.uploads_concurrent` uploads in progress on this server; `Retry-After` says when to try again */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    presign_upload: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PresignRequest"];
            };
        };
        responses: {
            /** @description A PENDING upload and the URL to PUT its bytes to */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Presigned"];
                };
            };
            /** @description The body could not be read: not JSON (`malformed_json`), not `Content-Type: application/json` (`unsupported_media_type`), or a form that is not one (`invalid_multipart`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `presign_unavailable`: the store is local; use POST /v1/uploads */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `file_too_large` or `storage_quota` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Bad purpose, content type or size (named in `field`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    show_upload: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Upload id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The upload */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UploadView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such upload of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_upload: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Upload id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such upload of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    complete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Upload id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description READY (or as it already was) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UploadView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such upload of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `not_uploaded`: no object in the bucket yet */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `size_mismatch`, `unsupported_media_type` or `checksum_mismatch`: the upload is REJECTED and its object removed */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `too_many_uploads`: the tenant has `limits.uploads_concurrent` uploads (and completions) in progress on this server; `Retry-After` says when to try again */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_webhook_endpoints: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The caller's endpoints */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EndpointList"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_webhook_endpoint: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateEndpoint"];
            };
        };
        responses: {
            /** @description Created; `secret` is shown this once */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EndpointWithSecret"];
                };
            };
            /** @description Not JSON, or unknown fields */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `too_many_endpoints`: the account has `webhooks.max_endpoints` already */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A bad URL (not https, not public, credentials in it) or event type (named in `field`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    show_webhook_endpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Endpoint id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The endpoint */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EndpointView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such endpoint of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_webhook_endpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Endpoint id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such endpoint of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    edit_webhook_endpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Endpoint id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PatchEndpoint"];
            };
        };
        responses: {
            /** @description The endpoint after the change */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EndpointView"];
                };
            };
            /** @description Not JSON, or unknown fields */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such endpoint of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A bad field (named in `field`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_webhook_deliveries: {
        parameters: {
            query?: {
                /** @description Only deliveries in this state: `PENDING`, `SUCCEEDED` or `FAILED`. */
                status?: string;
                /** @description `next_cursor` of the previous page. */
                cursor?: string;
                /** @description Page size, 1 to 100 (default 20). */
                limit?: number;
            };
            header?: never;
            path: {
                /** @description Endpoint id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The endpoint's deliveries, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Page_DeliveryView"];
                };
            };
            /** @description Bad status, limit or cursor (named in `field`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such endpoint of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    show_webhook_delivery: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Endpoint id */
                id: string;
                /** @description Delivery id */
                delivery: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The delivery and its attempts */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeliveryView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such endpoint or delivery of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    retry_webhook_delivery: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Endpoint id */
                id: string;
                /** @description Delivery id */
                delivery: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description On its way again */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeliveryView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such endpoint or delivery of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `delivery_pending`: it is still being attempted; `endpoint_disabled`: enable the endpoint first */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `rate_limited`: over `webhook_sends_per_min` (test events and manual retries); see Retry-After */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    rotate: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Endpoint id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The new secret, shown this once; `previous_secret_until` says how long the old one still signs */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EndpointWithSecret"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such endpoint of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    test: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Endpoint id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The test event is on its way */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TestSent"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such endpoint of the caller's */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `endpoint_disabled`: enable it first */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `rate_limited`: over `webhook_sends_per_min` (test events and manual retries); see Retry-After */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    alipay_webhook: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description Alipay's notify parameters, `sign` and `sign_type=RSA2` included */
        requestBody: {
            content: {
                "application/x-www-form-urlencoded": string;
            };
        };
        responses: {
            /** @description `success` (recorded, or recorded before, or nothing to do) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description `failure`: bad signature, another app or seller, amount mismatch, unknown payment (Alipay retries) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Alipay is not configured (`payments.alipay.public_key`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is JSON but not what this operation takes (`invalid_field`: an unknown field, a missing one, a wrong type) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Signature checks are busy (`Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    hmac_webhook: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description `{"id":…,"type":"payment.succeeded"|"payment.refunded","data":{"out_trade_no","amount","currency","refund_id"}}` (a refund's amount is what it gives back; `refund_id` is required for a refund) */
        requestBody: {
            content: {
                "application/json": Record<string, unknown>;
            };
        };
        responses: {
            /** @description Recorded (or recorded before): `{"received":true}` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, unknown>;
                };
            };
            /** @description Malformed, or amount/currency not the payment's */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Bad or expired signature */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such payment */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is JSON but not what this operation takes (`invalid_field`: an unknown field, a missing one, a wrong type) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Signature checks are busy (`Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    wechat_webhook: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description WeChat Pay's notification JSON */
        requestBody: {
            content: {
                "application/json": Record<string, unknown>;
            };
        };
        responses: {
            /** @description `{"code":"SUCCESS"}` (recorded, recorded before, or nothing to do) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, unknown>;
                };
            };
            /** @description `{"code":"FAIL"}`: bad or expired signature, unknown serial, undecryptable resource, another merchant, amount mismatch (WeChat retries) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, unknown>;
                };
            };
            /** @description WeChat Pay is not configured (`payments.wechat`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The body is JSON but not what this operation takes (`invalid_field`: an unknown field, a missing one, a wrong type) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Signature checks are busy (`Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    upgrade: {
        parameters: {
            query: {
                /** @description From `POST /v1/ws-tickets` */
                ticket: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description WebSocket: JSON text frames; see docs/api/live.md for the frames */
            101: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Not a WebSocket upgrade request */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Missing, forged, expired or reused ticket */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `Origin` outside `live.allowed_origins` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `too_many_streams` (this account's open streams on this server) or `too_many_failed_authentications` (this address sent too many invalid tickets or keys) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    issue: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A single-use ticket for the WebSocket upgrade (browsers cannot send headers on one) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TicketView"];
                };
            };
            /** @description Missing or invalid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `rate_limited`: tickets per minute of this account (`Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
}
