/** Medium → public JSON (/api/v1/media). */
import type { MediaDoc } from '../models';

/**
 * @param media the stored medium.
 * @returns the public record.
 */
export function presentMedia(media: MediaDoc): Record<string, unknown> {
  return {
    id: media._id,
    name: media.name,
    contentType: media.contentType,
    size: media.size,
    sha256: media.sha256,
    ...(media.width && media.height ? { width: media.width, height: media.height } : {}),
    organizationId: media.organizationId,
    ownerId: media.ownerId,
    createdAt: media.createdAt.toISOString(),
  };
}
