// The clubhouse image, built from this checkout's Containerfile on the stand-ins of its base images
// (stand-ins.ts): the only change from a build anywhere else is the two build arguments.
import path from 'node:path';
import type { Podman } from './podman.ts';
import { DEBIAN_IMAGE, nodeImage } from './stand-ins.ts';

const REPO = path.resolve(import.meta.dirname, '../..');

export const CLUBHOUSE_IMAGE = 'localhost/clubhouse:deploy-test';

export async function buildClubhouseImage(podman: Podman): Promise<string> {
  const node = await nodeImage(podman);
  await podman.podman([
    'build',
    // The host's network for RUN: no bridge of podman's default network is made on the machine.
    '--network',
    'host',
    // The docker format keeps HEALTHCHECK (the OCI image format has no field for it).
    '--format',
    'docker',
    '--build-arg',
    `NODE_IMAGE=${node}`,
    '--build-arg',
    `RUNTIME_IMAGE=${DEBIAN_IMAGE}`,
    '--file',
    path.join(REPO, 'Containerfile'),
    '--tag',
    CLUBHOUSE_IMAGE,
    REPO,
  ]);
  return CLUBHOUSE_IMAGE;
}
