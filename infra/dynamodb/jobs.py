"""`DynamoJobStore`: write jobs in the state table, one item per job (pk `T#<tenant>#J#<job>`, sk `J`).

Items go through boto3's TypeSerializer/TypeDeserializer. Part reports live in the map `reports`, keyed
by part number: recording a part is one UpdateItem that sets its own key, so a re-delivered part replaces
its report instead of counting twice, and parts processed concurrently never overwrite each other; it
applies only to an existing job, so a part processed after its tenant's erase never brings the job back.
Each job is also listed in the tenant's partition (pk `T#<tenant>`, sk `J#<job>`), which an erase reads
to find the job items (and deletes with the rest of the partition). Items expire through the table's TTL
attribute a week after the job was submitted.
"""

from __future__ import annotations

import json
from typing import Any

from core.indexing.write_jobs import Job
from infra.dynamodb.errors import dynamodb_errors
from infra.dynamodb.state_items import esc, tenant_pk, unesc
from infra.dynamodb.state_log import pages
from infra.dynamodb.tables import default_client

JOB_RETENTION_SECONDS = 7 * 24 * 3600  # long enough to poll a job and read its errors (a judgement call)


def job_key(tenant_id: str, job_id: str) -> dict[str, str]:
    return {"pk": f"T#{esc(tenant_id)}#J#{esc(job_id)}", "sk": "J"}


class DynamoJobStore:
    """JobStore on the DynamoDB state table."""

    def __init__(self, table: str, client: Any | None = None) -> None:
        from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

        self._table, self._client = table, client or default_client()
        self._ser, self._de = TypeSerializer(), TypeDeserializer()

    def _item(self, values: dict[str, Any]) -> dict[str, Any]:
        return {k: self._ser.serialize(v) for k, v in values.items()}

    def create_job(self, job: Job) -> None:
        from datetime import datetime

        created = datetime.fromisoformat(job.created_at.replace("Z", "+00:00")).timestamp()
        values = {
            **job_key(job.tenant_id, job.job_id),
            "kind": job.kind,
            "items": job.items,
            "chunks": job.chunks,
            "parts": job.parts,
            "created_at": job.created_at,
            "updated_at": job.updated_at,
            "reports": {},
            "expires_at": int(created) + JOB_RETENTION_SECONDS,
        }
        listing = {
            "pk": tenant_pk(job.tenant_id),
            "sk": f"J#{esc(job.job_id)}",
            "expires_at": values["expires_at"],
        }
        with dynamodb_errors():  # listed first: a job item always has its listing
            self._client.put_item(TableName=self._table, Item=self._item(listing))
            self._client.put_item(TableName=self._table, Item=self._item(values))

    def get_job(self, tenant_id: str, job_id: str) -> Job | None:
        with dynamodb_errors():
            found = self._client.get_item(
                TableName=self._table, Key=self._item(job_key(tenant_id, job_id)), ConsistentRead=True
            ).get("Item")
        if not found:
            return None
        v = {k: self._de.deserialize(a) for k, a in found.items()}
        reports = {int(p): json.loads(r) for p, r in v.get("reports", {}).items()}
        return Job(job_id, tenant_id, v["kind"], int(v["items"]), int(v["chunks"]), int(v["parts"]),
                   v["created_at"], v["updated_at"], reports)  # fmt: skip

    def delete_job(self, tenant_id: str, job_id: str) -> None:
        """Delete the job item, then its listing (the order create_job's reverse, so an item is never
        without its listing)."""
        listing = {"pk": tenant_pk(tenant_id), "sk": f"J#{esc(job_id)}"}
        with dynamodb_errors():
            self._client.delete_item(TableName=self._table, Key=self._item(job_key(tenant_id, job_id)))
            self._client.delete_item(TableName=self._table, Key=self._item(listing))

    def record_part(self, tenant_id: str, job_id: str, part: int, report: dict[str, Any], at: str) -> None:
        values = {":report": json.dumps(report, separators=(",", ":")), ":at": at}
        # a failed condition: the job is gone (erased with its tenant), nothing to record
        with dynamodb_errors("ConditionalCheckFailedException"):
            self._client.update_item(
                TableName=self._table,
                Key=self._item(job_key(tenant_id, job_id)),
                UpdateExpression="SET reports.#part = :report, updated_at = :at",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeNames={"#part": str(part)},
                ExpressionAttributeValues=self._item(values),
            )

    def purge_tenant(self, tenant_id: str) -> int:
        """Delete every job of the tenant, found through its listing in the tenant's partition."""
        query = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": self._item({":pk": tenant_pk(tenant_id), ":prefix": "J#"}),
        }
        with dynamodb_errors():
            jobs = [unesc(self._de.deserialize(i["sk"])[2:]) for i in pages(self._client.query, query)]
        for job_id in jobs:
            self.delete_job(tenant_id, job_id)
        return len(jobs)
