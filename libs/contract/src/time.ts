/** The seed's date-time form (section 2.2): `YYYY-MM-DDThh:mm:ssZ`, from unix seconds. */
export function toIsoSeconds(unix: number): string {
  return `${new Date(unix * 1000).toISOString().slice(0, 19)}Z`;
}
