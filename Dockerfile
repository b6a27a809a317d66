# syntax=docker/dockerfile:1
# Proctor: one static Go binary plus Debian's Chromium and the Playwright driver.
#   docker build -t proctor .
#   docker run -p 8080:8080 -v proctor-data:/data proctor

# Front-end files (htmx, Pico CSS) from package-lock.json, and the Playwright
# driver (playwright-core + the Node.js it runs on) for the runtime image. The
# devDependencies are test programs only.
FROM node:20-bookworm-slim AS node
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
 && mkdir -p /out/vendor \
 && cp node_modules/htmx.org/dist/htmx.min.js node_modules/@picocss/pico/css/pico.min.css /out/vendor/
# Must match playwright-go's driver version (scripts/browser.sh does the same).
ARG PLAYWRIGHT_VERSION=1.64.1
RUN mkdir -p /opt/playwright-driver \
 && cd /tmp && npm pack "playwright-core@${PLAYWRIGHT_VERSION}" --silent \
 && tar xzf "playwright-core-${PLAYWRIGHT_VERSION}.tgz" -C /opt/playwright-driver \
 && rm "playwright-core-${PLAYWRIGHT_VERSION}.tgz" \
 && cp /usr/local/bin/node /opt/playwright-driver/node
# Make now the edit that playwright-go's Install would otherwise try to write
# at run time, into a folder the server's user cannot write.
RUN sed -i \
      -e 's/pageError\.location\.url/pageError.location?.url || ""/g' \
      -e 's/pageError\.location\.lineNumber/pageError.location?.lineNumber || 0/g' \
      -e 's/pageError\.location\.columnNumber/pageError.location?.columnNumber || 0/g' \
      /opt/playwright-driver/package/lib/coreBundle.js

FROM golang:1.26-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0
COPY go.mod go.sum ./
RUN go mod download
COPY . .
COPY --from=node /out/vendor/ static/vendor/
RUN go build -trimpath -ldflags='-s -w' -o /out/proctor ./cmd/proctor

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      chromium fonts-liberation ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/*
COPY --from=node /opt/playwright-driver /opt/playwright-driver
COPY --from=build /out/proctor /usr/local/bin/proctor
RUN /opt/playwright-driver/node /opt/playwright-driver/package/cli.js --version | grep -qx 'Version 1.64.1' \
 && useradd --system --create-home --home-dir /home/proctor --uid 10001 proctor \
 && mkdir -p /data && chown proctor:proctor /data
ENV PLAYWRIGHT_DRIVER_PATH=/opt/playwright-driver \
    PROCTOR_CHROMIUM_PATH=/usr/bin/chromium \
    PROCTOR_ADDR=0.0.0.0:8080 \
    PROCTOR_DATA_DIR=/data
USER proctor
VOLUME /data
WORKDIR /data
EXPOSE 8080
ENTRYPOINT ["proctor"]
CMD ["serve"]
