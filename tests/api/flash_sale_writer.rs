//! The orders consumer writes a batch of orders in one transaction; an order the
//! database refuses is answered on its own (dead-lettered, its unit given back) and the
//! rest of its batch is written, also when orders share a broker message.

use conveyor::broker::settings::BrokerKind;
use conveyor::broker::{Envelope, Target};
use conveyor::domains::flash_sale::entity::sale;
use conveyor::domains::flash_sale::messages::{CREATE_ORDER, CREATE_ORDERS, CreateOrder};
use conveyor::domains::flash_sale::queues::ORDERS_CREATE;
use conveyor::domains::flash_sale::store;
use sea_orm::{ActiveModelTrait as _, ActiveValue::Set};
use serde_json::{Value, json};

use crate::flash_sale::{admin, order, remaining, sale};
use crate::helpers::*;
use crate::on_every_backend;

on_every_backend!(
    an_order_the_database_refuses_fails_alone_and_its_batch_is_written,
    orders_taken_at_once_share_messages_and_a_refused_one_still_fails_alone,
    a_message_of_several_orders_gives_each_its_own_outcome,
);

const WAIT: std::time::Duration = std::time::Duration::from_secs(60);

async fn dead_letters(app: &TestApp, admin: &str) -> Vec<Value> {
    let letters: Value = app
        .get_json(admin, "/v1/admin/dead-letters?queue=orders.create")
        .await;
    letters["items"].as_array().cloned().unwrap_or_default()
}

async fn written(app: &TestApp, orders: &[String]) -> Vec<String> {
    let mut written = Vec::new();
    for id in orders {
        if store::get_order(&app.platform.db, id)
            .await
            .unwrap()
            .is_some()
        {
            written.push(id.clone());
        }
    }
    written
}

/// A limit-one sale of `stock` units of which the database holds two fewer: Redis lets
/// two too many through, and the database is the backstop.
async fn sale_two_short(app: &TestApp, admin: &str, stock: i32) -> String {
    let sale_id = sale(app, admin, stock, 1).await;
    sale::ActiveModel {
        id: Set(sale_id.clone()),
        stock: Set(stock - 2),
        ..Default::default()
    }
    .update(&app.platform.db)
    .await
    .unwrap();
    sale_id
}

/// The sale's counter moved once per written order.
async fn assert_sold(app: &TestApp, sale_id: &str, sold: i32) {
    let s = store::get_sale(&app.platform.db, sale_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        s.sold, sold,
        "the database's counter moved once per written order"
    );
}

/// A dead letter's last error says `why`.
fn assert_error(letter: &Value, why: &str) {
    let error = letter["last_error"].as_str().unwrap_or_default();
    assert!(error.contains(why), "{letter}");
}

/// The sale's counter moved once per written order, and the two refused units went
/// back to the stock store.
async fn sold_and_two_back(app: &TestApp, sale_id: &str, sold: i32) {
    assert_sold(app, sale_id, sold).await;
    wait_until(
        std::time::Duration::from_secs(10),
        "the units back",
        || async { remaining(app, sale_id).await == Some(2) },
    )
    .await;
}

async fn an_order_the_database_refuses_fails_alone_and_its_batch_is_written(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "flash_writer").await else {
        return;
    };
    // With RabbitMQ the orders wait in their queue until the consumers start: one batch.
    let app = spawn_app(&env).await;
    let admin = admin(&app).await;
    let sale_id = sale_two_short(&app, &admin, 10).await;
    let mut orders = Vec::new();
    for i in 0..10 {
        let (_, key) = app.user(&format!("buyer{i}"), 0).await;
        let (status, body) = order(&app, &key, &sale_id).await;
        assert_eq!(status, 202, "{body}");
        orders.push(body["order_id"].as_str().unwrap().to_owned());
    }
    app.start_consumers();
    wait_until(WAIT, "8 orders written, 2 dead-lettered", || async {
        store::live_orders(&app.platform.db, &sale_id)
            .await
            .unwrap()
            == 8
            && dead_letters(&app, &admin).await.len() == 2
    })
    .await;
    for l in dead_letters(&app, &admin).await {
        assert_error(&l, "sold out in the database");
    }
    let written = written(&app, &orders).await.len();
    assert_eq!(written, 8);
    sold_and_two_back(&app, &sale_id, 8).await;
    done(env, app).await;
}

/// Buyers ordering at the same moment: intake packs the orders that meet while a confirm
/// is awaited into shared messages (fewer messages than orders on RabbitMQ); the
/// database refuses two of them, and exactly those two are dead-lettered, each alone
/// under its own order id, their units given back; the other 38 are written.
async fn orders_taken_at_once_share_messages_and_a_refused_one_still_fails_alone(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "flash_pack").await else {
        return;
    };
    let app = spawn_app(&env).await;
    let admin = admin(&app).await;
    let sale_id = sale_two_short(&app, &admin, 40).await;
    let mut keys = Vec::new();
    for i in 0..40 {
        keys.push(app.user(&format!("buyer{i}"), 0).await.1);
    }
    let answers =
        futures::future::join_all(keys.iter().map(|key| order(&app, key, &sale_id))).await;
    let mut orders = Vec::new();
    for (status, body) in answers {
        assert_eq!(status, 202, "{body}");
        orders.push(body["order_id"].as_str().unwrap().to_owned());
    }
    if app.platform.settings.broker.kind == BrokerKind::Rabbitmq {
        // The consumers have not started: the queue holds what intake published.
        let name = app.platform.broker.topology().queue(&ORDERS_CREATE).name;
        let messages = app.platform.broker.depth(&name).await.unwrap();
        assert!(
            (1..40).contains(&messages),
            "40 orders at once went out in {messages} messages"
        );
    }
    app.start_consumers();
    wait_until(WAIT, "38 orders written, 2 dead-lettered", || async {
        written(&app, &orders).await.len() == 38 && dead_letters(&app, &admin).await.len() == 2
    })
    .await;
    let written = written(&app, &orders).await;
    let mut refused: Vec<String> = orders
        .iter()
        .filter(|o| !written.contains(o))
        .cloned()
        .collect();
    let mut letters: Vec<String> = Vec::new();
    for l in dead_letters(&app, &admin).await {
        assert_eq!(l["kind"], CREATE_ORDER, "one order per dead letter: {l}");
        assert_error(&l, "sold out in the database");
        letters.push(l["business_id"].as_str().unwrap().to_owned());
    }
    refused.sort();
    letters.sort();
    assert_eq!(
        letters, refused,
        "the dead letters are the orders not written"
    );
    sold_and_two_back(&app, &sale_id, 38).await;
    done(env, app).await;
}

/// Messages of several orders as the consumer receives them: one whose orders are all
/// fine is written whole; one holding a buyer's second order in a limit-one sale writes
/// the others and dead-letters that order alone; one that carries no orders is
/// dead-lettered with the reason.
async fn a_message_of_several_orders_gives_each_its_own_outcome(backend: Backend) {
    let Some(env) = TestEnv::new(backend, "flash_many").await else {
        return;
    };
    let app = spawn_app(&env).await;
    let admin = admin(&app).await;
    let sale_id = sale(&app, &admin, 10, 1).await;
    let order_of = |user: &str| CreateOrder {
        order_id: uuid::Uuid::now_v7().to_string(),
        sale_id: sale_id.clone(),
        user_id: user.to_owned(),
    };
    let whole = [order_of("u1"), order_of("u2"), order_of("u3")];
    let (first, second) = (order_of("u4"), order_of("u4"));
    let with_a_second = [first.clone(), order_of("u5"), second.clone()];
    let empty = Envelope::new(CREATE_ORDERS, json!({ "orders": [] }));
    for message in [
        Envelope::new(CREATE_ORDERS, json!({ "orders": whole })),
        Envelope::new(CREATE_ORDERS, json!({ "orders": with_a_second })),
        empty.clone(),
    ] {
        app.platform
            .broker
            .publish(Target::Queue(&ORDERS_CREATE), &message)
            .await
            .unwrap();
    }
    app.start_consumers();
    let ids = |orders: &[CreateOrder]| -> Vec<String> {
        orders.iter().map(|o| o.order_id.clone()).collect()
    };
    let all: Vec<String> = [ids(&whole), ids(&with_a_second)].concat();
    wait_until(WAIT, "5 orders written, 2 dead letters", || async {
        written(&app, &all).await.len() == 5 && dead_letters(&app, &admin).await.len() == 2
    })
    .await;
    let written = written(&app, &all).await;
    for id in ids(&whole) {
        assert!(written.contains(&id), "{id} of the whole message");
    }
    assert!(written.contains(&with_a_second[1].order_id));
    // Which of the buyer's two orders came first alone is the queue's business; exactly
    // one of them is written, the other is the dead letter.
    let refused = if written.contains(&first.order_id) {
        &second
    } else {
        &first
    };
    let letters = dead_letters(&app, &admin).await;
    let alone = letters
        .iter()
        .find(|l| l["kind"] == CREATE_ORDER)
        .expect("the refused order, alone");
    assert_eq!(alone["business_id"], refused.order_id.as_str(), "{alone}");
    assert_error(alone, "already holds an order");
    let bad = letters
        .iter()
        .find(|l| l["message_id"] == empty.id.as_str())
        .expect("the message without orders");
    assert_error(bad, "without orders");
    assert_sold(&app, &sale_id, 5).await;
    done(env, app).await;
}

/// A message dead-lettered whole after some of its orders were written (a crash loop
/// after the commit, a split whose singles went through) gives back only the units of
/// the orders not written: a written order's unit stays sold.
#[tokio::test]
async fn a_dead_message_gives_back_only_the_units_of_orders_not_written() {
    use conveyor::consumer::{BatchHandler as _, Context, Fate};
    use conveyor::domains::flash_sale::handler::CreateOrderHandler;
    use conveyor::domains::flash_sale::service::Sales;

    // The stock store must be the app's: Redis (the embedded one lives in the app).
    let Some(env) = TestEnv::new(Backend::RabbitPostgres, "flash_dead_many").await else {
        return;
    };
    let app = spawn_app(&env).await;
    app.start_consumers();
    let admin = admin(&app).await;
    let sale_id = sale(&app, &admin, 10, 1).await;
    let (user, key) = app.user("buyer", 0).await;
    let (status, body) = order(&app, &key, &sale_id).await;
    assert_eq!(status, 202, "{body}");
    let written_id = body["order_id"].as_str().unwrap().to_owned();
    wait_until(WAIT, "the order written", || async {
        store::get_order(&app.platform.db, &written_id)
            .await
            .unwrap()
            .is_some()
    })
    .await;
    assert_eq!(remaining(&app, &sale_id).await, Some(9));

    let p = &app.platform;
    let handler = CreateOrderHandler {
        sales: std::sync::Arc::new(
            Sales::connect(&p.settings, p.broker.topology())
                .await
                .unwrap(),
        ),
        relay: p.relay.clone(),
        max_payload: p.settings.broker.max_payload_bytes,
    };
    let ctx = Context {
        db: p.db.clone(),
        broker: p.broker.clone(),
        queue: &ORDERS_CREATE,
    };
    let never_written = CreateOrder {
        order_id: uuid::Uuid::now_v7().to_string(),
        sale_id: sale_id.clone(),
        user_id: "another".into(),
    };
    let written = CreateOrder {
        order_id: written_id,
        sale_id: sale_id.clone(),
        user_id: user.id.clone(),
    };
    let message = Envelope::new(CREATE_ORDERS, json!({ "orders": [written, never_written] }));
    let fate = Fate::DeadLetter {
        reason: conveyor::broker::DeadReason::Exhausted,
        error: "every attempt failed".into(),
    };
    handler.on_failure(&ctx, &message, &fate).await.unwrap();
    assert_eq!(
        remaining(&app, &sale_id).await,
        Some(10),
        "one unit back: the order not written; the written one stays sold"
    );
    done(env, app).await;
}
