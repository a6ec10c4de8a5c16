//! The vectors of materials (`material_vectors`): written with the material in its
//! transaction, read by the sync and the reindex beside the rows they copy.

use std::collections::HashMap;

use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
};

use super::entity::material_vector;
use crate::search::semantic::{Embedded, decode, encode};

/// Inserts the vectors of each (material id, vectors), in one insert.
pub async fn write(
    txn: &impl ConnectionTrait,
    materials: &[(&str, &Embedded)],
) -> Result<(), DbErr> {
    let rows: Vec<material_vector::ActiveModel> = materials
        .iter()
        .flat_map(|(id, e)| {
            e.vectors
                .iter()
                .enumerate()
                .map(move |(seq, v)| material_vector::ActiveModel {
                    material_id: Set((*id).to_owned()),
                    seq: Set(seq as i16),
                    model: Set(e.model.chars().take(100).collect()),
                    vector: Set(encode(std::slice::from_ref(v))),
                })
        })
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    material_vector::Entity::insert_many(rows)
        .exec_without_returning(txn)
        .await?;
    Ok(())
}

/// The vectors of each of `ids` that has any (one query).
pub async fn of(
    db: &impl ConnectionTrait,
    ids: &[String],
) -> Result<HashMap<String, Vec<Vec<f32>>>, DbErr> {
    let mut out: HashMap<String, Vec<Vec<f32>>> = HashMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let rows = material_vector::Entity::find()
        .filter(material_vector::Column::MaterialId.is_in(ids.iter().cloned()))
        .order_by_asc(material_vector::Column::MaterialId)
        .order_by_asc(material_vector::Column::Seq)
        .all(db)
        .await?;
    for row in rows {
        // A row this code did not write is skipped rather than failing the sync.
        if let Some(v) = decode(&row.vector).and_then(|mut v| v.pop()) {
            out.entry(row.material_id).or_default().push(v);
        }
    }
    Ok(out)
}
