# Release image for docker-compose.yml: the `conveyor` CLI and `conveyor-consumer`.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
# The `dist` profile: whole-program LTO, less code resident per process (Cargo.toml).
RUN cargo build --profile dist --locked --bins

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/dist/conveyor /src/target/dist/conveyor-consumer /usr/local/bin/
COPY config /app/config
# Not root: a fixed unprivileged user owning only what it writes (./data for the embedded
# backends, unused with the real stack).
RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin conveyor \
    && mkdir -p /app/data && chown conveyor:conveyor /app/data
USER 10001:10001
WORKDIR /app
EXPOSE 8080
CMD ["conveyor", "serve"]
