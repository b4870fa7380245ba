# latchkey in a container built from scratch: the static binary, nothing
# else, running as a non-root user. For people with a registry:
#   docker build -t latchkey .
#   docker run -p 8080:8080 -v latchkey-data:/data -e LATCHKEY_ISSUER=http://localhost:8080 latchkey
# LATCHKEY_ISSUER is the URL clients reach (https://login.example.com in
# production): without it the issuer would be http://0.0.0.0:8080, which
# serve warns of. .dockerignore keeps latchkey-data/ (the server key), bin/
# and .git out of the build context.
# Without a registry, scripts/build-image builds the same image with buildah
# (docs/DEPLOY.md, "Packaging").
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
ARG COMMIT=unknown
ARG BUILD_DATE=unknown
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.buildDate=${BUILD_DATE}" \
    -o /latchkey ./cmd/latchkey && mkdir -p /data && chown 65532:65532 /data

FROM scratch
COPY --from=build /latchkey /latchkey
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build --chown=65532:65532 /data /data
USER 65532:65532
ENV LATCHKEY_LISTEN=0.0.0.0:8080 \
    LATCHKEY_DATABASE=sqlite:/data/latchkey.db \
    LATCHKEY_SECRET_KEY_FILE=/data/secret.key
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s CMD ["/latchkey", "healthcheck"]
ENTRYPOINT ["/latchkey"]
CMD ["serve"]
