//! The payment rules on an in-memory SQLite database: refunds take credits back in
//! proportion (the last one takes the rest), totals applied in any order give back the
//! total once, spent credits become a shortfall, a refund before its payment waits.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use sea_orm::{DatabaseConnection, EntityTrait as _, TransactionTrait as _};

use super::*;
use crate::users::entity::user;

const MAX: usize = 1 << 20;

/// Nobody listens: these tests are about the store alone.
fn quiet() -> crate::domains::payments::notify::Notify {
    crate::domains::payments::notify::Notify::new(crate::events::Events::default(), "CNY")
}

async fn db() -> DatabaseConnection {
    let db = crate::db::connect_url("sqlite::memory:", 1).await.unwrap();
    crate::db::migrate(&db).await.unwrap();
    db
}

/// A user with no credits and a paid-for pack of 100 credits at 990.
async fn pack(db: &DatabaseConnection) -> (String, Payment) {
    let (u, _) = crate::users::create(db, "payer", 0, false).await.unwrap();
    let new = NewPayment {
        product: "credits_100".into(),
        credits: 100,
        membership_months: 0,
        plan: None,
        order_id: None,
        amount: 990,
        currency: "CNY".into(),
    };
    let p = create(db, &u.id, new).await.unwrap();
    (u.id, p)
}

/// Receives event `id` of `kind` for payment `p`: its inbox row.
async fn received(db: &DatabaseConnection, p: &Payment, id: &str, kind: Kind) -> i64 {
    let txn = db.begin().await.unwrap();
    let row = receive(&txn, "hmac", id, &p.id, kind)
        .await
        .unwrap()
        .unwrap();
    txn.commit().await.unwrap();
    row
}

/// Receives event `id` of `kind` for payment `p` and applies it.
async fn apply_event(db: &DatabaseConnection, p: &Payment, id: &str, kind: Kind) -> Applied {
    let row = received(db, p, id, kind).await;
    apply(db, &quiet(), row, MAX).await.unwrap()
}

async fn balance(db: &DatabaseConnection, user_id: &str) -> i64 {
    user::Entity::find_by_id(user_id.to_owned())
        .one(db)
        .await
        .unwrap()
        .unwrap()
        .credits
}

fn taken(applied: &Applied) -> (i64, i64) {
    match applied {
        Applied::Refunded {
            credits, shortfall, ..
        } => (*credits, *shortfall),
        other => panic!("not a refund: {other:?}"),
    }
}

#[tokio::test]
async fn partial_refunds_take_back_in_proportion_and_the_last_takes_the_rest() {
    let db = db().await;
    let (user, p) = pack(&db).await;
    assert!(matches!(
        apply_event(&db, &p, "paid", Kind::Paid).await,
        Applied::Granted { credits: 100, .. }
    ));
    // A third of 990, three times: 33, 33 (66 of 100 by then), and the rest, 34.
    let mut back = Vec::new();
    for n in 1..=3 {
        back.push(taken(&apply_event(&db, &p, &format!("r{n}"), Kind::Refund(330)).await).0);
    }
    assert_eq!(back, [33, 33, 34]);
    assert_eq!(balance(&db, &user).await, 0);
    let after = get(&db, &p.id).await.unwrap().unwrap();
    assert_eq!(
        (after.status, after.refunded_amount, after.refunded_credits),
        (PaymentStatus::Refunded, 990, 100)
    );
    assert_eq!(
        apply_event(&db, &p, "r4", Kind::Refund(1)).await,
        Applied::NothingLeft
    );
}

#[tokio::test]
async fn refund_totals_in_any_order_give_back_the_total_once() {
    let db = db().await;
    let (user, p) = pack(&db).await;
    apply_event(&db, &p, "paid", Kind::Paid).await;
    // The later notice (total 660) first, then the earlier one (total 330): 66 back.
    assert_eq!(
        taken(&apply_event(&db, &p, "t2", Kind::RefundTotal(660)).await),
        (66, 0)
    );
    assert_eq!(
        apply_event(&db, &p, "t1", Kind::RefundTotal(330)).await,
        Applied::NothingLeft
    );
    assert_eq!(balance(&db, &user).await, 34);
}

#[tokio::test]
async fn a_refund_of_spent_credits_records_a_shortfall() {
    let db = db().await;
    let (user, p) = pack(&db).await;
    apply_event(&db, &p, "paid", Kind::Paid).await;
    let txn = db.begin().await.unwrap();
    crate::users::credits::reserve(&txn, &user, 80)
        .await
        .unwrap()
        .unwrap();
    txn.commit().await.unwrap();
    assert_eq!(balance(&db, &user).await, 20);
    // A full refund owes 100; 20 are left to take.
    assert_eq!(
        taken(&apply_event(&db, &p, "r", Kind::Refund(990)).await),
        (20, 80)
    );
    assert_eq!(balance(&db, &user).await, 0);
    assert_eq!(get(&db, &p.id).await.unwrap().unwrap().shortfall, 80);
}

#[tokio::test]
async fn a_refund_before_its_payment_waits_then_follows_it() {
    let db = db().await;
    let (user, p) = pack(&db).await;
    let refund = received(&db, &p, "early", Kind::Refund(495)).await;
    assert_eq!(
        apply(&db, &quiet(), refund, MAX).await.unwrap(),
        Applied::Waiting
    );
    apply_event(&db, &p, "paid", Kind::Paid).await;
    // The paid event put the refund back in line; applied, it takes back half.
    assert_eq!(
        taken(&apply(&db, &quiet(), refund, MAX).await.unwrap()),
        (50, 0)
    );
    assert_eq!(balance(&db, &user).await, 50);
    assert_eq!(
        apply(&db, &quiet(), refund, MAX).await.unwrap(),
        Applied::Before
    );
}

#[tokio::test]
async fn a_batch_applies_each_event_once_and_answers_in_the_order_asked() {
    let db = db().await;
    let (user, p) = pack(&db).await;
    let refund = received(&db, &p, "b-refund", Kind::Refund(495)).await;
    let paid = received(&db, &p, "b-paid", Kind::Paid).await;
    // Asked refund first, applied in id order (the refund's row is older, so it waits
    // for the payment applied after it in the same transaction), answered as asked.
    let missing = paid + 1000;
    // The paid event twice (a redelivery in the same lot): applied once.
    let out = apply_many(&db, &quiet(), &[paid, refund, missing, paid], MAX)
        .await
        .unwrap();
    assert!(
        matches!(out[0], Applied::Granted { credits: 100, .. }),
        "{out:?}"
    );
    assert_eq!(out[1], Applied::Waiting);
    assert_eq!(out[2], Applied::NoSuchEvent);
    assert_eq!(out[3], Applied::Before);
    assert_eq!(balance(&db, &user).await, 100);
    // Again: nothing twice (the waiting refund went back in line, RECEIVED again).
    let again = apply_many(&db, &quiet(), &[paid], MAX).await.unwrap();
    assert_eq!(again, [Applied::Before]);
    assert_eq!(balance(&db, &user).await, 100);
    assert!(matches!(
        apply(&db, &quiet(), refund, MAX).await.unwrap(),
        Applied::Refunded { .. }
    ));
    assert_eq!(balance(&db, &user).await, 50);
}
