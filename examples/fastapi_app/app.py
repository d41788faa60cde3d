"""A FastAPI app that enqueues a job in the same transaction as the row it writes.

    DATABASE_URL=postgresql+psycopg://localhost/app TASKQ_DSN=postgresql://localhost/app \\
        uvicorn examples.fastapi_app.app:app
    taskq migrate && taskq worker --actors examples.fastapi_app.tasks:registry

``POST /orders {"note": "..."}`` saves an order and enqueues its receipt in one
transaction: both or neither. ``"fail": true`` makes the request fail after the enqueue:
the transaction rolls back, and the job never existed. ``GET /jobs/{id}`` shows a job.
docs/fastapi.md walks through it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException
from pydantic import BaseModel
from sqlalchemy import String
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

import taskq
from taskq.contrib.fastapi import client, lifespan

from .tasks import send_receipt

engine = create_async_engine(os.environ.get("DATABASE_URL", "postgresql+psycopg:///app"))
Session = async_sessionmaker(engine, expire_on_commit=False)


class Base(DeclarativeBase):
    pass


class Order(Base):
    __tablename__ = "orders"
    id: Mapped[int] = mapped_column(primary_key=True)
    note: Mapped[str] = mapped_column(String(200))


@asynccontextmanager
async def app_lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
    """The app's own start-up around taskq's (its client opened for the app's life)."""
    async with engine.begin() as conn:
        await conn.run_sync(Base.metadata.create_all)
    async with lifespan()(app) as state:  # TASKQ_DSN, TASKQ_SCHEMA
        yield state
    await engine.dispose()


app = FastAPI(lifespan=app_lifespan)


async def session() -> AsyncIterator[AsyncSession]:
    """The request's database session."""
    async with Session() as db:
        yield db


class NewOrder(BaseModel):
    note: str
    fail: bool = False


Database = Annotated[AsyncSession, Depends(session)]
Jobs = Annotated[taskq.AsyncClient, Depends(client)]  # the client lifespan() opened


@app.post("/orders", status_code=201)
async def create_order(order: NewOrder, db: Database, jobs: Jobs) -> dict[str, Any]:
    async with db.begin():  # commits at the end of the block, rolls back on an exception
        row = Order(note=order.note)
        db.add(row)
        await db.flush()  # the order's id
        job_id = await jobs.enqueue_with(send_receipt, [row.id, order.note], connection=db)
        if order.fail:  # something after the enqueue goes wrong: neither row nor job
            raise HTTPException(409, {"rolled_back_job": str(job_id)})
    return {"order": row.id, "job": str(job_id)}


@app.get("/jobs/{job_id}")
async def show_job(job_id: str, jobs: Jobs) -> dict[str, Any]:
    try:
        job = await jobs.get(job_id)
    except taskq.JobNotFound:
        raise HTTPException(404, "no such job") from None
    return {"id": str(job.id), "state": job.state, "result": job.result}
