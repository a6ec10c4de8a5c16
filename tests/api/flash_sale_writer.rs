//! The orders consumer writes a batch of orders in one transaction; an order the
//! database refuses is answered on its own (dead-lettered, its unit given back) and the
//! rest of its batch is written.

use conveyor::domains::flash_sale::entity::sale;
use conveyor::domains::flash_sale::store;
use sea_orm::{ActiveModelTrait as _, ActiveValue::Set};
use serde_json::Value;

use crate::flash_sale::{admin, order, remaining, sale};
use crate::helpers::*;
use crate::on_every_backend;

on_every_backend!(an_order_the_database_refuses_fails_alone_and_its_batch_is_written);

async fn an_order_the_database_refuses_fails_alone_and_its_batch_is_written(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "flash_writer").await else {
        return;
    };
    // With RabbitMQ the orders wait in their queue until the consumers start: one batch.
    let app = spawn_app(&env).await;
    let admin = admin(&app).await;
    let sale_id = sale(&app, &admin, 10, 1).await;
    // The database holds 8 units where the stock store holds 10: Redis lets two too many
    // through, and the database is the backstop.
    sale::ActiveModel {
        id: Set(sale_id.clone()),
        stock: Set(8),
        ..Default::default()
    }
    .update(&app.platform.db)
    .await
    .unwrap();
    let mut orders = Vec::new();
    for i in 0..10 {
        let (_, key) = app.user(&format!("buyer{i}"), 0).await;
        let (status, body) = order(&app, &key, &sale_id).await;
        assert_eq!(status, 202, "{body}");
        orders.push(body["order_id"].as_str().unwrap().to_owned());
    }
    app.start_consumers();
    wait_until(
        std::time::Duration::from_secs(60),
        "8 orders written, 2 dead-lettered",
        || async {
            let letters: Value = app
                .get_json(&admin, "/v1/admin/dead-letters?queue=orders.create")
                .await;
            store::live_orders(&app.platform.db, &sale_id)
                .await
                .unwrap()
                == 8
                && letters["items"].as_array().map_or(0, Vec::len) == 2
        },
    )
    .await;
    let letters: Value = app
        .get_json(&admin, "/v1/admin/dead-letters?queue=orders.create")
        .await;
    for l in letters["items"].as_array().unwrap() {
        assert!(
            l["last_error"]
                .as_str()
                .unwrap()
                .contains("sold out in the database"),
            "{l}"
        );
    }
    let written = {
        let mut n = 0;
        for id in &orders {
            n += usize::from(
                store::get_order(&app.platform.db, id)
                    .await
                    .unwrap()
                    .is_some(),
            );
        }
        n
    };
    assert_eq!(written, 8);
    let s = store::get_sale(&app.platform.db, &sale_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        s.sold, 8,
        "the database's counter moved once per written order"
    );
    // The two refused units went back to the stock store.
    wait_until(
        std::time::Duration::from_secs(10),
        "the units back",
        || async { remaining(&app, &sale_id).await == Some(2) },
    )
    .await;
    done(env, app).await;
}
